"""Plan -> what people and scripts read: plan.json, plan.xlsx and the terminal summary.

Nothing here knows about PuLP; it reads only :class:`planner.results.plan.Plan`.
"""

from planner.report.json_export import plan_to_dict, plan_json
from planner.report.summary import summary_text
from planner.report.workbook import write_workbook
from planner.results.plan import register_writers

# the functions a Plan's summary(), to_json() and to_excel() call: registered by the report layer itself, so the
# results layer below never imports it (a Plan made without the report loaded loads it on first use: results.plan)
register_writers(summary=summary_text, json=plan_json, workbook=write_workbook)

__all__ = ["plan_to_dict", "plan_json", "summary_text", "write_workbook"]
