"""
## What it does
Reports a symbolic link, met in a folder walk or named on the command line, whose target
lies outside the project: the git repository (or the config file's folder) of the paths
given, or a folder given on the command line. The target is not opened, and a linked
folder is not walked. `--follow-external-symlinks` (config `follow-external-symlinks:
true`) reads such targets; `--fix` never writes through a link, whatever the flag.

## Why is this bad?
A pull request can add `creds.yaml -> ../../.git-credentials` (or a kubeconfig, a Docker
`config.json`): a linter that follows it prints the secret in a public CI log, and a fixer
that follows it rewrites a file it was never asked to touch. A manifest that lives
elsewhere is better linted where it lives.

## Example
```yaml
# creds.yaml is a symbolic link to ../../.git-credentials
```

## Use instead
```yaml
# a regular file in the repository, or a link to a file inside it
```

## Options
None.

## Fix
None.

## References
- SECURITY.md (what ailint reads and writes, door by door)
"""

from __future__ import annotations

from ailint.core.model import Severity
from ailint.core.rule import Rule

RULE = Rule(
    code="YML013",
    name="symlink-outside-project",
    severity=Severity.INFO,
    summary="A symbolic link leads out of the project; not read",
    engine=True,
    tags=("input",),
)
