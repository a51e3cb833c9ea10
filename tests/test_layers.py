"""Packages by layer (issue 33): the import-linter contract in pyproject.toml holds, no module takes part in an
import circle, and every module of the planner imports on its own."""

from __future__ import annotations

import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import planner
from conftest import ROOT


def test_the_layers_contract_is_kept():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    r = subprocess.run([exe, "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-1000:]
    assert "1 kept, 0 broken" in r.stdout


def _cycles(graph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.find_modules_directly_imported_by(w)))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_import_circle():
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph("planner")
    assert len(graph.modules) > 100  # the whole package was read
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_circle():
    class G:  # a -> b -> c -> a, d -> a
        modules = {"a", "b", "c", "d"}
        edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}

        def find_modules_directly_imported_by(self, m):
            return self.edges.get(m, set())

    assert _cycles(G()) == [["a", "b", "c"]]


def test_every_module_imports_on_its_own():
    names = [m.name for m in pkgutil.walk_packages(planner.__path__, "planner.") if not m.name.endswith("__main__")]
    assert len(names) > 100
    code = "import importlib, sys\nfor n in sys.argv[1:]:\n    importlib.import_module(n)\n"
    r = subprocess.run([sys.executable, "-c", code, *names], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
