"""Plan -> what people and scripts read: plan.json, plan.xlsx and the terminal summary.

Nothing here knows about PuLP; it reads only :class:`planner.results.plan.Plan`.
"""

from planner.report.json_export import plan_to_dict, plan_json
from planner.report.summary import summary_text
from planner.report.workbook import write_workbook

__all__ = ["plan_to_dict", "plan_json", "summary_text", "write_workbook"]
