"""CloudWatch Logs retention: the day counts a tenant config may use, as CDK enum members."""

from __future__ import annotations

from typing import Final

from aws_cdk import aws_logs as logs

_R = logs.RetentionDays
RETENTION_BY_DAYS: Final = {
    1: _R.ONE_DAY, 3: _R.THREE_DAYS, 5: _R.FIVE_DAYS, 7: _R.ONE_WEEK, 14: _R.TWO_WEEKS,
    30: _R.ONE_MONTH, 60: _R.TWO_MONTHS, 90: _R.THREE_MONTHS, 120: _R.FOUR_MONTHS,
    150: _R.FIVE_MONTHS, 180: _R.SIX_MONTHS, 365: _R.ONE_YEAR, 400: _R.THIRTEEN_MONTHS,
    545: _R.EIGHTEEN_MONTHS, 731: _R.TWO_YEARS, 1096: _R.THREE_YEARS, 1827: _R.FIVE_YEARS,
    2192: _R.SIX_YEARS, 2557: _R.SEVEN_YEARS, 2922: _R.EIGHT_YEARS, 3288: _R.NINE_YEARS,
    3653: _R.TEN_YEARS,
}


def retention(days: int) -> logs.RetentionDays:
    """The retention enum for a validated day count."""
    return RETENTION_BY_DAYS[days]
