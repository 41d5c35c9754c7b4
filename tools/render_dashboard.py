"""Throwaway: draw docs/dashboard.png from the synthesized dashboard body and a local run.

Synthesizes the example tenant, reads its dashboard's widgets, runs a short workload on the
local service with Powertools metrics switched on (EMF lines captured from stdout), times
each tool handler in-process (a stand-in for AWS/Lambda Duration, on a shared machine:
noisy), and lays the widgets out as the body says (24 columns), one SVG chart each,
screenshotted with Debian's chromium. AWS-only metrics (throttles, iterator age, queue
depth, Step Functions, API Gateway) have no local source and are drawn as such.

    .venv/bin/python tools/render_dashboard.py docs/dashboard.png
"""

from __future__ import annotations

import asyncio
import html
import io
import json
import os
import secrets
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BUCKET_S = 10
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf", "#393b79"]


def dashboard_body() -> dict[str, Any]:
    """The synthesized body, tokens replaced by the logical id they name."""
    from aws_cdk import App

    from infra.app import build_app
    from infra.constructs.functions import SYNTH_WITHOUT_LAYER

    out = tempfile.mkdtemp(prefix="engram-dash-")
    app, stack = build_app(App(outdir=out, context={SYNTH_WITHOUT_LAYER: "true"}))
    app.synth()
    template = json.loads((Path(out) / f"{stack.stack_name}.template.json").read_text())
    (dash,) = [r for r in template["Resources"].values()
               if r["Type"] == "AWS::CloudWatch::Dashboard"]
    parts = dash["Properties"]["DashboardBody"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else
                   p.get("Ref") or p["Fn::GetAtt"][0] for p in parts)
    body: dict[str, Any] = json.loads(text)
    names = {lid: r["Properties"]["Handler"].split(".")[1]
             for lid, r in template["Resources"].items()
             if r["Type"] == "AWS::Lambda::Function"}
    body["function_names"] = names
    return body


def workload(durations: dict[str, list[tuple[float, float]]]) -> str:
    """Run agents and a host on the local service; the EMF lines printed meanwhile."""
    os.environ["POWERTOOLS_METRICS_DISABLED"] = "false"
    from engram_memory.local import inprocess_invoker
    from engram_memory.local.service import LocalConfig, start_service
    from engram_memory.local.state import host_key
    from engram_memory_host import mint_maintainer_token

    original = inprocess_invoker.InProcessInvoker.invoke

    def timed(self: Any, tool: Any, invocation: dict[str, Any]) -> dict[str, Any]:
        started = time.monotonic()
        try:
            return original(self, tool, invocation)
        finally:
            durations[tool.value].append((time.time(), (time.monotonic() - started) * 1000))

    inprocess_invoker.InProcessInvoker.invoke = timed  # type: ignore[method-assign]
    import httpx2

    from tests.e2e.conftest import connect
    from tests.e2e.test_memory_flow import capture_arguments
    captured = io.StringIO()
    with redirect_stdout(captured):
        service = start_service(LocalConfig(port=0, tenant="example-tenant",
                                            workspaces=("default",)))
        key = host_key(service.home)
        ident = service.identity

        def maintainer() -> str:
            return mint_maintainer_token(key, issuer=ident.issuer, audience=ident.audience,
                                         tenant=ident.tenant, subject="local-operator",
                                         tenant_wide=True)

        async def agent(round_: int) -> None:
            token = service.mint(workspace="default", purpose_ref="purpose:demo",
                                 capabilities=["search", "get", "capture",
                                               "request_admission", "forget"])
            async with connect(service.mcp_url, token, "auto") as client:
                for i in range(4):
                    text = f"Fact {round_}-{i}: deploys run from release {secrets.token_hex(3)}."
                    cap = await client.call_tool("engram_memory_capture",
                                                 capture_arguments(text, "purpose:demo"))
                    cand = cap.structured_content["output"]["value"]["candidate_id"]
                    await client.call_tool("engram_memory_request_admission", {
                        "candidate_id": cand, "idempotency_key": secrets.token_hex(12)})
                    await client.call_tool("engram_memory_search", {
                        "query": "release", "purpose_ref": "purpose:demo"})
                await client.call_tool("engram_memory_get", {
                    "record_id": "mem_" + "a" * 52, "purpose_ref": "purpose:demo"})
                await client.call_tool("engram_memory_search", {"query": ""})

        for round_ in range(12):
            asyncio.run(agent(round_))
            if round_ % 3 == 0:
                response = httpx2.post(service.base_url + "/host/confirmations", json={
                    "workspace_id": "default", "capability": "forget", "principal": "p",
                    "target": "mem_" + "b" * 52, "operation_digest": "sha256:" + "0" * 64,
                    "ttl_seconds": 60}, headers={"Authorization": f"Bearer {maintainer()}"},
                    timeout=30)
                ref = response.json()["elicitationRef"]
                decision = "approve" if round_ % 2 == 0 else "reject"
                httpx2.post(service.base_url + f"/host/confirmations/{ref}/decision", json={
                    "workspace_id": "default", "decision": decision, "approver": "alice"},
                    headers={"Authorization": f"Bearer {maintainer()}"}, timeout=30)
            time.sleep(4)
        service.stop()
    return captured.getvalue()


def series_from_emf(emf: str) -> dict[tuple[str, str], dict[int, float]]:
    """(metric name, service) → bucket → sum."""
    out: dict[tuple[str, str], dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for line in emf.splitlines():
        if not line.startswith('{"_aws"'):
            continue
        blob = json.loads(line)
        bucket = blob["_aws"]["Timestamp"] // 1000 // BUCKET_S
        for directive in blob["_aws"]["CloudWatchMetrics"]:
            for metric in directive["Metrics"]:
                values = blob[metric["Name"]]
                total = sum(values) if isinstance(values, list) else values
                out[(metric["Name"], blob.get("service", ""))][bucket] += total
    return out


def chart(lines: list[tuple[str, dict[int, float]]], buckets: list[int], width: int,
          height: int) -> str:
    """One SVG line chart (no library: a handful of polylines)."""
    if not lines:
        return (f'<svg width="{width}" height="{height}"><text x="10" y="{height // 2}" '
                'class="none">AWS metric: no local source</text></svg>')
    top = max([max(v.values(), default=0) for _, v in lines] + [1])
    plot_w, plot_h, left = width - 10, height - 30, 30
    step = (plot_w - left) / max(1, len(buckets) - 1)
    parts = [f'<svg width="{width}" height="{height}">',
             f'<text x="0" y="12" class="axis">{top:.0f}</text>',
             f'<line x1="{left}" y1="{plot_h}" x2="{plot_w}" y2="{plot_h}" class="base"/>']
    for index, (_label, values) in enumerate(lines):
        points = " ".join(
            f"{left + i * step:.1f},{plot_h - (values.get(b, 0) / top) * (plot_h - 15):.1f}"
            for i, b in enumerate(buckets))
        color = COLORS[index % len(COLORS)]
        parts.append(f'<polyline points="{points}" fill="none" stroke="{color}" '
                     'stroke-width="1.5"/>')
    parts.append("</svg>")
    legend = "".join(
        f'<span><i style="background:{COLORS[i % len(COLORS)]}"></i>{html.escape(label)}</span>'
        for i, (label, values) in enumerate(lines) if any(values.values()))
    return "".join(parts) + f'<div class="legend">{legend}</div>'


def render(body: dict[str, Any], emf: str, durations: dict[str, list[tuple[float, float]]],
           out: Path) -> None:
    """Lay out the widgets and screenshot them."""
    custom = series_from_emf(emf)
    stamps = [b for series in custom.values() for b in series]
    buckets = list(range(min(stamps), max(stamps) + 1))
    names = body["function_names"]
    cards = []
    for widget in body["widgets"]:
        w, h, x, y = (widget[k] for k in ("width", "height", "x", "y"))
        props = widget["properties"]
        style = f"grid-column:{x + 1}/span {w};grid-row:{y + 1}/span {h}"
        if widget["type"] == "text":
            text = html.escape(props["markdown"].splitlines()[0].lstrip("# "))
            cards.append(f'<div class="card text" style="{style}"><h1>{text}</h1></div>')
            continue
        lines: list[tuple[str, dict[int, float]]] = []
        for row in props["metrics"]:
            if isinstance(row[0], dict):
                continue
            values = [v for v in row if not isinstance(v, dict)]
            options = row[-1] if isinstance(row[-1], dict) else {}
            if options.get("visible") is False:
                continue
            namespace, metric, *flat = values
            dims = dict(zip(flat[::2], flat[1::2], strict=True))
            label = str(options.get("label") or metric)
            if namespace == "EngramMemory":
                lines.append((label, custom.get((metric, dims.get("service", "")), {})))
            elif namespace == "AWS/Lambda" and metric == "Duration":
                fn = names.get(dims["FunctionName"], "")
                q = int(options["stat"][1:]) / 100
                per: dict[int, list[float]] = defaultdict(list)
                for at, ms in durations.get(fn, []):
                    per[int(at) // BUCKET_S].append(ms)
                pct = {b: sorted(v)[min(len(v) - 1, int(q * len(v)))] for b, v in per.items()}
                if pct:
                    lines.append((fn, pct))
        svg = chart(lines, buckets, w * 40 - 20, h * 30 - 60)
        cards.append(f'<div class="card" style="{style}"><h2>{html.escape(props["title"])}'
                     f"</h2>{svg}</div>")
    page = ("<!doctype html><meta charset=utf-8><style>"
            "body{margin:0;padding:12px;background:#f2f3f3;font:12px system-ui,sans-serif}"
            ".grid{display:grid;grid-template-columns:repeat(24,40px);"
            "grid-auto-rows:30px;gap:0}"
            ".card{background:#fff;border:1px solid #d5dbdb;margin:3px;padding:6px;"
            "overflow:hidden}.card h2{font-size:12px;margin:0 0 4px}"
            ".text h1{font-size:16px;margin:4px}.none{fill:#888;font-style:italic}"
            ".axis{fill:#666;font-size:10px}.base{stroke:#ccc}"
            ".legend span{margin-right:8px;white-space:nowrap;font-size:10px}"
            ".legend i{display:inline-block;width:8px;height:8px;margin-right:3px}"
            "</style><div class=grid>" + "".join(cards) + "</div>")
    html_path = Path(tempfile.mkdtemp()) / "dashboard.html"
    html_path.write_text(page, encoding="utf-8")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium",
                                             args=["--no-sandbox"])
        page_ = browser.new_page(viewport={"width": 24 * 40 + 24, "height": 400})
        page_.goto(html_path.as_uri())
        page_.screenshot(path=str(out), full_page=True)
        browser.close()


def main() -> None:
    """Synthesize, run, render."""
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/dashboard.png")
    body = dashboard_body()
    durations: dict[str, list[tuple[float, float]]] = defaultdict(list)
    emf = workload(durations)
    render(body, emf, durations, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
