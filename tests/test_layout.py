"""The package's layout rules, checked on its source."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kstreamlike"
MAX_LINES = 500


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).parent.parts)


def _is_package(dotted: str) -> bool:
    return (PACKAGE.parent.joinpath(*dotted.split(".")) / "__init__.py").exists()


def _private_owner(module: str, names: list[str]) -> str | None:
    """The package whose private part ``from module import names`` reaches, or None."""
    parts = module.split(".")
    private = next((i for i, part in enumerate(parts) if part.startswith("_")), None)
    if private is not None:
        return ".".join(parts[:private])
    if any(name.startswith("_") for name in names):
        return module if _is_package(module) else ".".join(parts[:-1])
    return None


def private_imports() -> list[str]:
    """Every import of a module or name private to a package, from outside that package
    (the package root ``kstreamlike`` may share its private modules with all of it)."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        importer = _package(path)
        for node in ast.walk(ast.parse(path.read_text())):
            imports: list[tuple[str, list[str]]] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imports.append((node.module, [alias.name for alias in node.names]))
            elif isinstance(node, ast.Import):
                imports.extend((alias.name, []) for alias in node.names)
            for module, names in imports:
                if not module.startswith("kstreamlike."):
                    continue
                owner = _private_owner(module, names)
                if owner is None or owner == "kstreamlike":
                    continue
                if importer != owner and not importer.startswith(owner + "."):
                    found.append(f"{_module(path)} imports private parts of {owner}: {module}")
    return found


def test_no_package_imports_another_packages_private_parts() -> None:
    assert private_imports() == []


def test_the_rule_sees_a_private_import(tmp_path: Path) -> None:
    """The check itself: a private module or name reached from another package is found."""
    assert _private_owner("kstreamlike.backends.polars._output", ["finish_main"]) == (
        "kstreamlike.backends.polars"
    )
    assert _private_owner("kstreamlike.kernels.python", ["_keys"]) == "kstreamlike.kernels"
    assert _private_owner("kstreamlike.kernels.python", ["user_keys"]) is None


def test_modules_are_small_or_say_why() -> None:
    """No module over about 500 lines, unless its docstring says why it is not split."""
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text()
        lines = text.count("\n")
        docstring = ast.get_docstring(ast.parse(text)) or ""
        if lines > MAX_LINES and "Not split:" not in docstring:
            long.append(f"{_module(path)}: {lines} lines")
    assert long == []
