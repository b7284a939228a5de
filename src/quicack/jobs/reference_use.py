"""Which data/reference files a job reads, read from the source with `ast` (nothing is imported or run).

A job reads a reference file by calling one of quicack.reference's readers, whose `READS` table says which file each
reads from its arguments. From the job's entry point (a notebook's code; the function a `quicack` subcommand runs)
the functions it uses are followed through every name they mention (a call, a function passed along, a table of
functions), across modules, and so is the code every imported module runs when it is imported; each reader call met
on the way names its file. A reader called with a non-literal argument its file depends on is an error (the workflow
could not tell what the job reads). Over-approximate by design: a function mentioned is counted as called.

workflow/rules/common.smk gives each job these files as inputs: editing imc24_tab03.csv re-renders the notebooks
whose functions read it, not the other papers' (nor imc24's other tables).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from quicack.jobs.code_graph import CodeGraph

READER_MODULE = "quicack.reference"


class ReferenceReadError(ValueError):
    """A reader call the workflow cannot resolve to a file."""


@dataclass
class _Scope:
    """What the names of one module (or script) stand for: its functions and classes, its assignments and what
    it imports (anywhere in it: module name, attribute or None)."""

    defs: dict[str, ast.AST] = field(default_factory=dict)
    assigns: dict[str, list[ast.AST]] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)


def _import_time_nodes(statements: list[ast.stmt]) -> list[ast.AST]:
    """What runs when these statements run as a module (or class) body: everything but function bodies."""
    nodes: list[ast.AST] = []
    for statement in statements:
        # A decorator is called with the function or class when the statement runs.
        decorators = [
            ast.Call(func=d, args=[], keywords=[], lineno=d.lineno) for d in getattr(statement, "decorator_list", [])
        ]
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            nodes += [*decorators, *statement.args.defaults, *(d for d in statement.args.kw_defaults if d)]
        elif isinstance(statement, ast.ClassDef):
            nodes += [*decorators, *statement.bases, *(k.value for k in statement.keywords)]
            nodes += _import_time_nodes(statement.body)
        else:
            nodes.append(statement)
    return nodes


class ReferenceUse:
    """The reference files read by what runs from an entry point, in the package `graph` reads."""

    def __init__(self, graph: CodeGraph, reference_dir: Path) -> None:
        self.graph = graph
        self.reference_dir = reference_dir
        tree = graph.module_tree(READER_MODULE)
        reads = next(
            ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "READS" for t in node.targets)
        )  # fmt: skip
        parameters = {
            node.name: [arg.arg for arg in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
            for node in tree.body if isinstance(node, ast.FunctionDef)
        }  # fmt: skip
        self.readers = {name: (template, parameters[name]) for name, template in reads.items()}
        self._scopes: dict[str, _Scope] = {}
        self._script_trees: dict[str, ast.Module] = {}
        # What each module's import-time code leads to, followed once: every job imports mostly the same modules.
        # (Following is a closure, so the files of several starts are the union of each start's.)
        self._import_time_reads: dict[str, set[Path]] = {}

    # --- what names stand for

    def _scope(self, key: str) -> _Scope:
        if key not in self._scopes:
            tree = self._script_trees[key] if key in self._script_trees else self.graph.module_tree(key)
            package = key if key in self.graph.paths and self.graph.is_package(key) else key.rpartition(".")[0]
            scope = _Scope()
            for statement in tree.body:
                if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    scope.defs[statement.name] = statement
            for runs in _import_time_nodes(tree.body):
                for sub in ast.walk(runs):
                    if not isinstance(sub, ast.Assign | ast.AnnAssign | ast.AugAssign) or sub.value is None:
                        continue
                    targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                    for target in targets:
                        for name in (n.id for n in ast.walk(target) if isinstance(n, ast.Name)):
                            scope.assigns.setdefault(name, []).append(sub.value)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            scope.imports[alias.asname] = (alias.name, None)
                        else:
                            root = alias.name.split(".")[0]
                            scope.imports[root] = (root, None)
                elif isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:
                        anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                        base = ".".join(anchor + ([base] if base else []))
                    for alias in node.names:
                        if alias.name != "*":
                            scope.imports[alias.asname or alias.name] = (base, alias.name)
            self._scopes[key] = scope
        return self._scopes[key]

    def _attribute(self, module: str, name: str, seen: frozenset = frozenset()) -> tuple[str, str | None] | None:
        """What `module.name` is: ("reader", name), (module, None) for a module, (module, name) for a function,
        class or assignment of the package, None for anything outside it."""
        if f"{module}.{name}" in self.graph.paths:
            return (f"{module}.{name}", None)
        if module not in self.graph.paths or (module, name) in seen:
            return None
        if module == READER_MODULE and name in self.readers:
            return ("reader", name)
        scope = self._scope(module)
        if name in scope.defs or name in scope.assigns:
            return (module, name)
        if name in scope.imports:  # a re-export
            return self._imported(scope.imports[name], seen | {(module, name)})
        lazy = self.graph.lazy_names(module)
        if name in lazy:
            return self._attribute(lazy[name], name, seen | {(module, name)})
        return None

    def _imported(
        self, imported: tuple[str, str | None], seen: frozenset = frozenset()
    ) -> tuple[str, str | None] | None:
        module, name = imported
        if name is None:
            return (module, None) if module in self.graph.paths else None
        return self._attribute(module, name, seen)

    def _resolve(self, key: str, node: ast.expr) -> tuple[str, str | None] | None:
        """What a name or a dotted name (a.b.c) in module `key` stands for."""
        chain: list[str] = []
        while isinstance(node, ast.Attribute):
            chain.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        scope = self._scope(key)
        if node.id in scope.imports:
            target = self._imported(scope.imports[node.id])
        elif node.id in scope.defs or node.id in scope.assigns:
            target = (key, node.id)
        else:
            return None
        for attribute in chain:
            if target is None or target[1] is not None:
                break  # an attribute of a function, class or value: the symbol is followed whole
            target = self._attribute(target[0], attribute)
        return target

    # --- following what runs

    def _reader_file(self, key: str, call: ast.Call, reader: str) -> Path:
        template, parameters = self.readers[reader]
        bound: dict[str, ast.expr] = dict(zip(parameters, call.args, strict=False))
        bound.update({keyword.arg: keyword.value for keyword in call.keywords if keyword.arg})
        values = {}
        for name in (part.split("}")[0] for part in template.split("{")[1:]):
            value = bound.get(name)
            if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
                where = self._script_trees.get(key) and key or self.graph.paths[key]
                raise ReferenceReadError(
                    f"{where}:{call.lineno}: {reader}(...) with a non-literal {name}: the workflow cannot tell which "
                    f"data/reference file it reads (pass it as a literal, e.g. {reader}(\"imc24\", ...))"
                )
            values[name] = value.value
        return self.reference_dir / template.format(**values)

    def _follow(self, start: list[tuple[str, list[ast.AST], bool]]) -> set[Path]:
        """The files read by the nodes of `start` ((module or script, nodes, mentions)) and all they lead to. With
        `mentions`, every function a node mentions counts as run (a function body, a notebook); without (the code a
        module runs when imported), only the functions it calls: a table of functions built at import time runs
        none of them, and is followed when a function that runs mentions it."""
        files: set[Path] = set()
        seen: set[tuple[str, str | None]] = set()
        todo = list(start)

        def reach(target: tuple[str, str | None], node: ast.AST, key: str) -> None:
            if target in seen:
                return
            if target[0] == "reader":
                raise ReferenceReadError(f"{self.graph.paths.get(key, key)}:{getattr(node, 'lineno', '?')}: the "
                                         f"reader {target[1]} is used other than by a call: the workflow cannot tell "
                                         "which data/reference file it reads")
            seen.add(target)
            module, name = target
            if name is None:  # a module used as a value: any of its functions may run
                todo.append((module, list(self._scope(module).defs.values()), True))
                return
            scope = self._scope(module)
            todo.append((module, [scope.defs[name]] if name in scope.defs else scope.assigns.get(name, []), True))

        while todo:
            key, nodes, mentions = todo.pop()
            stack = [(node, mentions) for node in nodes]
            while stack:
                node, mentioned = stack.pop()
                if isinstance(node, ast.Call):
                    target = self._resolve(key, node.func) if isinstance(node.func, ast.Name | ast.Attribute) else None
                    if target is not None and target[0] == "reader" and target[1] is not None:
                        files.add(self._reader_file(key, node, target[1]))
                        stack += [(child, mentioned) for child in (*node.args, *node.keywords)]
                        continue
                    if target is not None:
                        # A function of the package runs, and may run what it is given.
                        reach(target, node, key)
                        stack += [(child, True) for child in (*node.args, *node.keywords)]
                        continue
                elif mentioned and isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Load):
                    target = self._resolve(key, node)
                    if target is not None:
                        reach(target, node, key)
                        continue
                stack.extend((child, mentioned) for child in ast.iter_child_nodes(node))
        return files

    def _import_time(self, modules: set[str]) -> set[Path]:
        """The files the import-time code of `modules` leads to."""
        for module in sorted(set(modules) - set(self._import_time_reads)):
            nodes = _import_time_nodes(self.graph.module_tree(module).body)
            self._import_time_reads[module] = self._follow([(module, nodes, False)])
        return set().union(*(self._import_time_reads[module] for module in modules))

    def script_reads(self, script: Path) -> set[Path]:
        """The reference files a script (a notebook) reads: its own code and what it calls, and the import-time
        code of every module it imports."""
        key = f"<script {script}>"
        self._script_trees[key] = self.graph.tree(script)
        return self._follow([(key, list(self._script_trees[key].body), True)]) | self._import_time(
            self.graph.script_modules(script)
        )

    def command_reads(self, command: str) -> set[Path]:
        """The reference files `quicack <command>` reads: from the function quicack.cli.COMMANDS names for it (which
        sets the handler), and the import-time code of every module the command imports."""
        module, function = self.graph.commands[command]
        return self._follow([(module, [self._scope(module).defs[function]], True)]) | self._import_time(
            self.graph.command_modules(command)
        )

    def package_reads(self) -> set[Path]:
        """The files every function of the package reads, read once: proves each reader call resolves."""
        return self._follow([(module, list(self.graph.module_tree(module).body), True) for module in self.graph.paths])
