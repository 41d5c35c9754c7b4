"""The lock of the Lambda dependency layer: written from a pip resolution, read and checked.

The lock (``infra/lambda-layer.lock``) is a pip requirements file: one ``name==version``
per distribution with the sha256 of the one wheel chosen for the Lambda platform, so
``pip install --require-hashes -r`` installs exactly those files or fails. Under each entry
a ``# requires:`` comment records that wheel's own requirements as they apply ON the
Lambda platform (markers evaluated for CPython 3.13 on aarch64 Linux, with the extras the
resolution asked for); pip evaluates markers for the machine it runs on, so this is what
lets a test prove offline that the lock is closed over the target's dependency graph.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Final

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

LAMBDA_PYTHON: Final = "3.13"
# Marker environment of the Lambda python3.13 runtime on arm64 (Amazon Linux 2023).
TARGET_MARKERS: Final = {
    "implementation_name": "cpython",
    "implementation_version": f"{LAMBDA_PYTHON}.0",
    "os_name": "posix",
    "platform_machine": "aarch64",
    "platform_python_implementation": "CPython",
    "platform_release": "",
    "platform_system": "Linux",
    "platform_version": "",
    "python_full_version": f"{LAMBDA_PYTHON}.0",
    "python_version": LAMBDA_PYTHON,
    "sys_platform": "linux",
}
_DIGEST_LINE: Final = "# pyproject-dependencies-sha256: "
_REQUIRES: Final = "# requires:"


@dataclass(frozen=True, slots=True)
class LockedWheel:
    """One pinned distribution of the layer."""

    name: str  # canonical
    version: str
    extras: tuple[str, ...]
    sha256: str
    requires: tuple[str, ...]  # requirement strings, markers already resolved for the target


def dependencies_digest(dependencies: list[str]) -> str:
    """A digest of pyproject's run-time dependencies: the lock records the one it was made for."""
    return hashlib.sha256(json.dumps(dependencies).encode("utf-8")).hexdigest()


def applies_on_lambda(requirement: Requirement, extras: tuple[str, ...]) -> bool:
    """Whether a requirement holds on the Lambda platform for a distribution's extras."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**TARGET_MARKERS, "extra": extra})
               for extra in (*extras, ""))


def wheels_from_report(report: dict[str, Any]) -> list[LockedWheel]:
    """The wheels of a ``pip install --dry-run --report`` resolution, sorted by name."""
    wheels = []
    for item in report["install"]:
        metadata = item["metadata"]
        extras = tuple(sorted(item.get("requested_extras") or ()))
        requires = []
        for raw in metadata.get("requires_dist") or ():
            requirement = Requirement(raw)
            if applies_on_lambda(requirement, extras):
                requirement.marker = None
                requires.append(str(requirement))
        wheels.append(LockedWheel(
            name=canonicalize_name(metadata["name"]),
            version=metadata["version"],
            extras=extras,
            sha256=item["download_info"]["archive_info"]["hashes"]["sha256"],
            requires=tuple(sorted(requires)),
        ))
    return sorted(wheels, key=lambda wheel: wheel.name)


def render_lock(wheels: list[LockedWheel], *, dependencies: list[str], header: str) -> str:
    """The lock file text (``header`` lines become comments)."""
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    lines.append(f"{_DIGEST_LINE}{dependencies_digest(dependencies)}")
    for wheel in wheels:
        extras = f"[{','.join(wheel.extras)}]" if wheel.extras else ""
        lines.append(f"{wheel.name}{extras}=={wheel.version} \\")
        lines.append(f"    --hash=sha256:{wheel.sha256}")
        lines.append(f"    {_REQUIRES} {'; '.join(wheel.requires)}".rstrip())
    return "\n".join(lines) + "\n"


def parse_lock(text: str) -> tuple[str, dict[str, LockedWheel]]:
    """The recorded dependencies digest and the wheels by canonical name."""
    digest = ""
    wheels: dict[str, LockedWheel] = {}
    pending: tuple[Requirement, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith(_DIGEST_LINE.strip()):
            digest = line.removeprefix(_DIGEST_LINE.strip()).strip()
        elif line.startswith("--hash=sha256:"):
            assert pending is not None, "a hash without a requirement"
            pending = (pending[0], line.removeprefix("--hash=sha256:"))
        elif line.startswith(_REQUIRES):
            assert pending is not None, "requires without a requirement"
            requirement, sha256 = pending
            listed = line.removeprefix(_REQUIRES).strip()
            (version,) = [spec.version for spec in requirement.specifier if spec.operator == "=="]
            name = canonicalize_name(requirement.name)
            wheels[name] = LockedWheel(
                name=name, version=version, extras=tuple(sorted(requirement.extras)),
                sha256=sha256,
                requires=tuple(part.strip() for part in listed.split(";") if part.strip()))
            pending = None
        elif line and not line.startswith("#"):
            pending = (Requirement(line.removesuffix("\\").strip()), "")
    return digest, wheels


def unmet_requirements(dependencies: list[str], wheels: dict[str, LockedWheel]) -> list[str]:
    """Requirements of pyproject or of a locked wheel that the lock does not satisfy."""
    unmet = []
    wanted = [(Requirement(dep), "pyproject") for dep in dependencies]
    wanted += [(Requirement(req), wheel.name) for wheel in wheels.values()
               for req in wheel.requires]
    for requirement, wanted_by in wanted:
        if not applies_on_lambda(requirement, ()):
            continue
        locked = wheels.get(canonicalize_name(requirement.name))
        if locked is None:
            unmet.append(f"{requirement} (wanted by {wanted_by}): not locked")
        elif not requirement.specifier.contains(Version(locked.version), prereleases=True):
            unmet.append(f"{requirement} (wanted by {wanted_by}): locked {locked.version}")
        elif not set(requirement.extras) <= set(locked.extras):
            unmet.append(f"{requirement} (wanted by {wanted_by}): extras not locked")
        elif not locked.sha256:
            unmet.append(f"{requirement} (wanted by {wanted_by}): no hash")
    return unmet


def layer_wheels(dependencies: list[str], wheels: dict[str, LockedWheel],
                 unused: frozenset[str]) -> list[LockedWheel]:
    """The locked wheels the run time can import: pyproject's closure without ``unused``.

    A distribution in ``unused`` is not followed, so what only it requires drops out too;
    anything another kept wheel requires stays. Sorted by name.
    """
    kept: dict[str, LockedWheel] = {}
    pending = [Requirement(dep) for dep in dependencies]
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if name in kept or name in unused or not applies_on_lambda(requirement, ()):
            continue
        kept[name] = wheels[name]
        pending.extend(Requirement(req) for req in wheels[name].requires)
    return sorted(kept.values(), key=lambda wheel: wheel.name)


def pinned_requirements(wheels: list[LockedWheel]) -> str:
    """A pip requirements file of exactly these wheels, each with its sha256."""
    lines = []
    for wheel in wheels:
        extras = f"[{','.join(wheel.extras)}]" if wheel.extras else ""
        lines.append(f"{wheel.name}{extras}=={wheel.version} --hash=sha256:{wheel.sha256}")
    return "\n".join(lines) + "\n"
