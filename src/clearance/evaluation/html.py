"""The HTML report of a suite run: one self-contained file (no script, no external file, the
charts inline SVG drawn by matplotlib), a summary, then one section per rollout stage with
its gate, its checks and its failing cases.

Everything written into the page that came from a suite or a document is escaped (Jinja2
autoescape): a question or an answer is text, never markup.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
from matplotlib import rc_context
from matplotlib.figure import Figure

__all__ = ["render_html"]

from clearance.evaluation.suite import RATE_LABELS

_TEMPLATE = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined).from_string(
    """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>Evaluation: {{ report.suite }}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:70em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.2em .6em;text-align:right}
td:first-child,th:first-child{text-align:left}.pass{color:#176317;font-weight:bold}
.fail{color:#b00020;font-weight:bold}.muted{color:#777}section{margin-top:2.5em}
li{margin:.2em 0}code{background:#f3f3f3;padding:0 .2em}
</style></head><body>
<h1>Evaluation: {{ report.suite }}</h1>
<p class="muted">{{ report.source }} · {{ report.generated_at }}
{% if report.assistant %} · assistant {{ report.assistant }}{% endif %}
· {{ report.overall.cases }} cases</p>
<p>Overall: <span class="{{ 'pass' if report['pass'] else 'fail' }}">
{{ 'every stage passes' if report['pass'] else 'some stage fails' }}</span>
· leaks {{ report.overall.leaks }} · fabricated numbers {{ report.overall.fabricated_numbers }}</p>
{% if regressions is not none %}<h2>Against the baseline</h2>
{% if regressions %}<ul>{% for r in regressions %}<li class="fail">{{ r }}</li>{% endfor %}</ul>
{% else %}<p class="pass">no regression</p>{% endif %}{% endif %}
<h2>Stages</h2>
<table><tr><th>stage</th><th>corpora</th><th>cases</th><th>gate</th><th>open for rollout</th></tr>
{% for s in report.stages %}<tr><td><a href="#stage-{{ loop.index }}">{{ s.name }}</a></td>
<td>{{ s.corpora|join(', ') }}</td><td>{{ s.measures.cases }}</td>
<td class="{{ 'pass' if s['pass'] else 'fail' }}">{{ 'pass' if s['pass'] else 'FAIL' }}</td>
<td>{{ 'yes' if s.open else 'no' }}</td></tr>{% endfor %}</table>
{{ charts.stages|safe }}
<h2>Latency per route</h2>
<table><tr><th>route</th><th>cases</th><th>p50 ms</th><th>p95 ms</th></tr>
{% for route, l in report.latency_by_route.items() %}<tr><td>{{ route }}</td><td>{{ l.count }}</td>
<td>{{ '%.1f'|format(l.p50_ms) }}</td><td>{{ '%.1f'|format(l.p95_ms) }}</td></tr>{% endfor %}</table>
{{ charts.latency|safe }}
{% for s in report.stages %}<section id="stage-{{ loop.index }}">
<h2>Stage {{ loop.index }}: {{ s.name }} —
<span class="{{ 'pass' if s['pass'] else 'fail' }}">{{ 'PASS' if s['pass'] else 'FAIL' }}</span></h2>
{% if s.description %}<p>{{ s.description }}</p>{% endif %}
<p class="muted">corpora: {{ s.corpora|join(', ') or '—' }} · {{ s.measures.cases }} cases ·
{{ 'open for rollout' if s.open else 'not open: this stage or an earlier one fails' }}</p>
<table><tr><th>measure</th><th>value</th><th>threshold</th><th>gate</th></tr>
{% for c in s.checks %}<tr><td>{{ c.measure }}</td><td>{{ fmt(c.value) }}</td>
<td>{{ c.op }} {{ fmt(c.threshold) }}</td>
<td class="{{ 'pass' if c['pass'] else 'fail' }}">{{ 'pass' if c['pass'] else 'FAIL' }}</td></tr>
{% endfor %}</table>
{{ charts.per_stage[loop.index0]|safe }}
{% set failing = cases[s.name] %}
{% if failing %}<h3>Cases with problems</h3><ul>{% for r in failing %}
<li><code>{{ r.id }}</code> ({{ r.user }}{% if r.assistant %}, {{ r.assistant }}{% endif %}):
{{ r.problems|join('; ') }}</li>{% endfor %}</ul>
{% else %}<p class="pass">every case as expected</p>{% endif %}
</section>{% endfor %}
</body></html>
"""
)


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def _svg(figure: Figure) -> str:
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight")
    text = buffer.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog and doctype: inline SVG


def _rates(measures: Mapping[str, Any]) -> list[float]:
    """The rates to draw; a rate with nothing to judge is NaN, so no bar is drawn for it."""
    rates = [(measures.get(k) or {}).get("rate") for k in RATE_LABELS]
    return [float("nan") if r is None else float(r) for r in rates]


def _stage_chart(stages: Sequence[Mapping[str, Any]]) -> str:
    figure = Figure(figsize=(9, 3.2))
    ax = figure.subplots()
    width = 0.8 / max(1, len(stages))
    positions = range(len(RATE_LABELS))
    for i, stage in enumerate(stages):
        offsets = [p + (i - (len(stages) - 1) / 2) * width for p in positions]
        ax.bar(offsets, _rates(stage["measures"]), width, label=stage["name"])
    ax.set_xticks(list(positions), list(RATE_LABELS.values()))
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("rate")
    ax.legend(
        fontsize="small",
        ncols=min(5, len(stages)),
        loc="upper center",
        bbox_to_anchor=(0.5, -0.1),
        frameon=False,
    )
    return _svg(figure)


def _one_stage_chart(stage: Mapping[str, Any]) -> str:
    figure = Figure(figsize=(6, 2.2))
    ax = figure.subplots()
    ax.barh(list(RATE_LABELS.values()), _rates(stage["measures"]), color="#4a78b0")
    ax.set_xlim(0, 1.0)
    ax.invert_yaxis()
    ax.set_xlabel("rate")
    return _svg(figure)


def _latency_chart(latency: Mapping[str, Mapping[str, Any]]) -> str:
    figure = Figure(figsize=(6, 2.4))
    ax = figure.subplots()
    routes = list(latency)
    positions = range(len(routes))
    ax.bar([p - 0.2 for p in positions], [latency[r]["p50_ms"] for r in routes], 0.4, label="p50")
    ax.bar([p + 0.2 for p in positions], [latency[r]["p95_ms"] for r in routes], 0.4, label="p95")
    ax.set_xticks(list(positions), routes)
    ax.set_ylabel("ms")
    ax.legend(fontsize="small")
    return _svg(figure)


def render_html(report: Mapping[str, Any], regressions: Sequence[str] | None = None) -> str:
    """The page for ``report`` (the JSON shape of :class:`SuiteReport`); ``regressions``
    against a baseline when one was given."""
    # stable element ids (reproducible files); text stays text (small, searchable labels)
    with rc_context({"svg.hashsalt": "clearance-eval", "svg.fonttype": "none"}):
        latency = report["latency_by_route"]
        charts = {
            "stages": _stage_chart(report["stages"]),
            "per_stage": [_one_stage_chart(s) for s in report["stages"]],
            "latency": _latency_chart(latency) if latency else "",
        }
    cases: dict[str, list[Mapping[str, Any]]] = {s["name"]: [] for s in report["stages"]}
    for result in report["results"]:
        if result["problems"]:
            cases.setdefault(result["stage"], []).append(result)
    page = _TEMPLATE.render(
        report=report, regressions=regressions, charts=charts, cases=cases, fmt=_fmt
    )
    return re.sub(r"\n\s*\n", "\n", page)
