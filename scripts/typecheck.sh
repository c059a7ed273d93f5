#!/usr/bin/env bash
# mypy, strict, on every package: bruce.wire, bruce.producer, bruce.client, bruce.proxy, bruce.spark, bruce.tool
# (pyproject.toml's [tool.mypy]). The installed package maps bruce.wire -> wire/, bruce.producer -> producer/ and so on (setuptools'
# package-dir), which mypy cannot follow: a tree of links build/typecheck/bruce/<package> -> <package>/ (build/ is not
# committed) gives it the installed names.
set -euo pipefail
cd "$(dirname "$0")/.."
tree=build/typecheck/bruce
mkdir -p "$tree"
for package in wire producer proxy spark client tool; do
    ln -sfn "../../../$package" "$tree/$package"
done
exec .venv/bin/python -m mypy "$@"
