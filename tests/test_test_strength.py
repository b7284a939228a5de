"""A scan of the test files for assertions that cannot fail (issue 40): tests as strong as their names.

Two kinds, found from the syntax tree (fast: no test is imported or run):

- **Tautologies**: ``assert True`` or any other constant; a comparison of an expression with itself
  (``assert x == x``, ``assert f() == f()``, ``is``, ``<=``, ``>=``): both sides the same source text.
- **Empty-loop assertions**: a ``for`` loop in a test function whose body asserts, over an iterable that may be empty,
  so that the test passes on nothing. The heuristic: the loop is guarded when
    1. its iterable is a non-empty literal (``[...]``, ``(...)``, ``{...}``, a string) or ``range`` of literals, or a
       module-level name bound to a non-empty literal; or
    2. an ``assert`` earlier in the same test (or at module level) names one of the iterable's variables
       (``assert captures``, ``assert len(rows) == 3``, ``assert table.height > 10`` guard ``for r in rows``,
       ``for row in table.iter_rows()``, ``for c in sorted(captures)``); or
    3. an ``assert`` after the loop names a variable the loop's body binds (``compared += 1`` … ``assert compared``);
    4. a local name bound before the loop to a non-empty literal (``numbers = set(found) | {1, 2}``), or to a
       comprehension without a filter over one (``pages = [f"{p}.html" for p in ("a", "b")]``).
  A loop nested in a guarded loop is judged on its own: the outer loop's variable guards nothing.
  Calls wrapping the iterable (``sorted``, ``enumerate``, ``zip``, ``list``, ``set``, ``reversed``, ``.items()``,
  ``.rows()``, ``.iter_rows()``, …) are looked through: their variables are the iterable's.

Parametrize over found files is the other way a test passes on nothing: pyproject.toml sets pytest's
``empty_parameter_set_mark = fail_at_collect``, so an empty parameter set fails the run instead of skipping;
test_an_empty_parameter_set_fails_the_collection checks that setting.

The scanner is tested on small hand-made snippets (it must flag each weak form and pass each guarded one), then run
on every test file.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
REPO = TESTS.parent


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str  # "tautology" or "empty-loop"
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.kind}: {self.text}"


def _names(node: ast.AST) -> set[str]:
    """The variable names an expression reads (``table`` and ``rows`` in ``table.rows(n)``)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _asserted_names(statements: list[ast.stmt]) -> set[str]:
    return {name for s in statements for a in ast.walk(s) if isinstance(a, ast.Assert) for name in _names(a.test)}


def _bound_names(node: ast.AST) -> set[str]:
    """Names a loop body binds (assignments, augmented assignments, appends via ``x.append``)."""
    bound = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            bound |= {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name):
            if n.func.attr in ("append", "add", "extend", "update", "setdefault"):
                bound.add(n.func.value.id)
    return bound


def _is_nonempty_literal(node: ast.expr, literals: set[str]) -> bool:
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return bool(node.elts)
    if isinstance(node, ast.Dict):
        return bool(node.keys)
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (str, bytes)) and bool(node.value)
    if isinstance(node, ast.Name):
        return node.id in literals
    if isinstance(node, ast.IfExp):  # ("a", "b") if c else ("a",)
        return _is_nonempty_literal(node.body, literals) and _is_nonempty_literal(node.orelse, literals)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitOr, ast.Add)):  # set(found) | {1, 2}
        return _is_nonempty_literal(node.left, literals) or _is_nonempty_literal(node.right, literals)
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        # [f(x) for x in (1, 2)]: one generator over a non-empty literal, without a filter
        (generator, *more) = node.generators
        return not more and not generator.ifs and _is_nonempty_literal(generator.iter, literals)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "walk":
        return True  # ast.walk(tree) yields at least the tree
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
        return all(isinstance(a, ast.Constant) for a in node.args)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("split", "splitlines")
    ):
        return _is_nonempty_literal(node.func.value, literals)  # "a b c".split()
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _WRAPPERS:
        return bool(node.args) and all(_is_nonempty_literal(a, literals) for a in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _VIEWS:
        return _is_nonempty_literal(node.func.value, literals)
    return False


_WRAPPERS = {"sorted", "enumerate", "zip", "list", "set", "tuple", "reversed", "iter", "dict", "frozenset"}
_VIEWS = {"items", "keys", "values", "rows", "iter_rows", "to_list", "to_dicts", "iterrows"}


def _module_literals(tree: ast.Module) -> set[str]:
    """Module-level names bound to a non-empty literal (``CASES = [...]``)."""
    literals: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if _is_nonempty_literal(node.value, literals):
                literals |= {t.id for t in targets if isinstance(t, ast.Name)}
    return literals


def _loop_findings(function: ast.FunctionDef, literals: set[str], guarded_globally: set[str]) -> list[int]:
    """Line numbers of the unguarded asserting loops of one test function."""
    unguarded: list[int] = []

    def visit(statements: list[ast.stmt], guarded: set[str]) -> None:
        for index, statement in enumerate(statements):
            before = statements[:index]
            guarded_here = guarded | _asserted_names(before)
            if isinstance(statement, ast.Assign) and _is_nonempty_literal(statement.value, literals | guarded):
                guarded |= {t.id for t in statement.targets if isinstance(t, ast.Name)}  # numbers = {1, 2} | found
            if isinstance(statement, ast.For):
                body_asserts = any(isinstance(n, ast.Assert) for s in statement.body for n in ast.walk(s))
                names = _names(statement.iter)
                after_guards = _asserted_names(statements[index + 1 :]) & _bound_names(statement)
                safe = (
                    _is_nonempty_literal(statement.iter, literals) or bool(names & guarded_here) or bool(after_guards)
                )
                if body_asserts and not safe:
                    unguarded.append(statement.lineno)
                # The loop's own variable guards nothing: `for c in CASES: for p in c.parts` may still be empty.
                visit(statement.body, guarded_here)
            elif isinstance(statement, (ast.If, ast.While, ast.With, ast.Try)):
                for block in ("body", "orelse", "finalbody"):
                    visit(getattr(statement, block, []), guarded_here)
                for handler in getattr(statement, "handlers", []):
                    visit(handler.body, guarded_here)

    visit(function.body, guarded_globally)
    return unguarded


def _tautology(test: ast.expr) -> bool:
    if isinstance(test, ast.Constant):
        return True  # assert True, assert 1, assert "text"
    if (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], (ast.Eq, ast.Is, ast.LtE, ast.GtE))
    ):
        return ast.dump(test.left) == ast.dump(test.comparators[0])
    return False


def scan(source: str, path: str = "<snippet>") -> list[Finding]:
    """The tautologies and unguarded asserting loops of one test module's source."""
    tree = ast.parse(source)
    findings = [
        Finding(path, node.lineno, "tautology", ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert) and _tautology(node.test)
    ]
    literals = _module_literals(tree)
    guarded_globally = _asserted_names(tree.body)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            lines = source.splitlines()
            findings += [
                Finding(path, line, "empty-loop", lines[line - 1].strip())
                for line in _loop_findings(node, literals, guarded_globally)
            ]
    return sorted(findings, key=lambda f: (f.path, f.line))


# --- the scanner on hand-made snippets (the forms it must flag and those it must pass) ---

WEAK_SNIPPETS = {
    "filtered_comprehension": "def test_a():\n    xs = [p for p in (1, 2) if p > 5]\n    for x in xs:\n        assert "
                              "x\n",
    "assert_true": "def test_a():\n    assert True\n",
    "assert_constant": "def test_a():\n    assert 1\n",
    "self_comparison": "def test_a():\n    x = f()\n    assert x == x\n",
    "call_with_itself": "def test_a():\n    assert engine_identity() == engine_identity()\n",
    "loop_over_glob": "def test_a():\n    for p in Path('d').glob('*.json'):\n        assert p.stat().st_size\n",
    "loop_over_unasserted_name": "def test_a():\n    rows = load()\n    for r in rows:\n        assert r > 0\n",
    "loop_over_module_glob": "FILES = sorted(Path('d').glob('*'))\ndef test_a():\n    for f in FILES:\n        assert "
                             "f\n",
    "assert_after_loop_unrelated": "def test_a():\n    for r in load():\n        assert r\n    assert other\n",
    "nested_unguarded": "def test_a():\n    for x in [1, 2]:\n        for y in load(x):\n            assert y\n",
}
STRONG_SNIPPETS = {
    "comprehension_over_literal": "def test_a():\n    pages = [f'{p}.html' for p in ('a', 'b')]\n    for page in "
                                  "pages:\n        assert page\n",
    "literal": "def test_a():\n    for x in (1, 2, 3):\n        assert f(x)\n",
    "module_literal": "CASES = [1, 2]\ndef test_a():\n    for c in CASES:\n        assert c\n",
    "asserted_before": "def test_a():\n    rows = load()\n    assert rows\n    for r in rows:\n        assert r > 0\n",
    "asserted_length": "def test_a():\n    t = load()\n    assert t.height == 3\n    for r in t.iter_rows():\n        "
                       "assert r\n",
    "counted_after": "def test_a():\n    n = 0\n    for r in load():\n        assert r\n        n += 1\n    assert n > "
                     "0\n",
    "collected_after": "def test_a():\n    seen = []\n    for r in load():\n        assert r\n        "
                       "seen.append(r)\n    assert seen\n",
    "module_assert": "FILES = find()\nassert FILES\ndef test_a():\n    for f in FILES:\n        assert f\n",
    "loop_without_assert": "def test_a():\n    total = 0\n    for r in load():\n        total += r\n    assert total "
                           "== 3\n",
    "range_literal": "def test_a():\n    for i in range(3):\n        assert i < 3\n",
    "comparison_of_two_things": "def test_a():\n    assert f(1) == f(2)\n",
}


@pytest.mark.parametrize("name", sorted(WEAK_SNIPPETS))
def test_scanner_flags_the_handmade_weak_form(name: str) -> None:
    assert scan(WEAK_SNIPPETS[name]), f"{name}: not flagged"


@pytest.mark.parametrize("name", sorted(STRONG_SNIPPETS))
def test_scanner_passes_the_handmade_guarded_form(name: str) -> None:
    assert scan(STRONG_SNIPPETS[name]) == [], name


def test_no_test_file_has_a_tautology_or_an_unguarded_asserting_loop() -> None:
    files = sorted(TESTS.rglob("test_*.py"))
    assert len(files) > 50
    findings = [f for path in files for f in scan(path.read_text(encoding="utf-8"), str(path.relative_to(REPO)))]
    assert findings == [], "\n" + "\n".join(map(str, findings))


def test_an_empty_parameter_set_fails_the_collection(tmp_path: Path) -> None:
    """A parametrize over files found at collection time must fail when none are found, not skip: the setting is in
    pyproject.toml, and a hand-made test module over an empty list fails under it."""
    options = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert options["empty_parameter_set_mark"] == "fail_at_collect"
    module = tmp_path / "test_handmade_empty.py"
    module.write_text(
        "import pytest\n\n@pytest.mark.parametrize('path', [])\ndef test_a(path):\n    assert path\n", encoding="utf-8"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
            "-c",
            str(REPO / "pyproject.toml"),
            "--rootdir",
            str(tmp_path),
            str(module),
        ],
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=tmp_path,
    )
    assert run.returncode != 0 and "Empty parameter set" in run.stdout, run.stdout[-2000:]
