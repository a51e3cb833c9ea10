"""Every public function, method and class of the package says what it is for."""

from __future__ import annotations

import ast

from conftest import ROOT


def test_every_public_definition_has_a_docstring():
    missing = []
    for path in sorted((ROOT / "planner").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(node, prefix=""):
            for child in ast.iter_child_nodes(node):
                if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                        and not child.name.startswith("_"):
                    if not ast.get_docstring(child):
                        missing.append(f"{path.relative_to(ROOT)}:{child.lineno} {prefix}{child.name}")
                    if isinstance(child, ast.ClassDef):
                        visit(child, prefix + child.name + ".")

        visit(tree)
    assert missing == [], "public definitions without a docstring:\n" + "\n".join(missing)
