"""Checks the answers before anything is written, so a bad name fails here
with a sentence instead of later as a confusing CMake or compiler error.
(The answers arrive as JSON string literals, which are valid Python, so no
answer can break this file.)"""
import re
import sys

NAME = {{ cookiecutter.extension_name|tojson }}
PROVIDER = {{ cookiecutter.provider_id|tojson }}
ARCH = {{ cookiecutter.architecture|tojson }}
VERSION = {{ cookiecutter.version|tojson }}
DESCRIPTION = {{ cookiecutter.description|tojson }}
API = {{ cookiecutter.api_version|tojson }}
# The lowest revision the template's own code needs (the newest API name it
# uses), which `tools/gen_api_docs.py --requirement-of` derives and the
# template tests keep equal to it.
NEEDS = {{ cookiecutter._api_needs|tojson }}

problems = []
# The patterns are those of schema/extension.schema.json, a little stricter
# where the name also becomes C identifiers and macro names.
if not re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)*", NAME) or not 2 <= len(NAME) <= 48:
    problems.append(f"extension_name '{NAME}' must be snake_case, 2 to 48 characters: lowercase letters, "
                    "digits and single underscores, starting with a letter (e.g. 'my_quant')")
if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", PROVIDER) or not 2 <= len(PROVIDER) <= 64:
    problems.append(f"provider_id '{PROVIDER}' must be lowercase words joined by '-', 2 to 64 characters "
                    "(e.g. 'my-quant')")
# The architecture goes into the GGUF, the manifest key "gguf:ARCH" and a C
# string; the probe compares it byte for byte.
if not re.fullmatch(r"[A-Za-z0-9._-]+", ARCH) or len(ARCH) > 64:
    problems.append(f"architecture '{ARCH}' may only hold letters, digits, '.', '_' and '-' (at most 64)")
if not 1 <= len(DESCRIPTION) <= 200 or "\n" in DESCRIPTION:
    problems.append("description must be one line of 1 to 200 characters")
if not re.fullmatch(r"\d+\.\d+\.\d+", VERSION):
    problems.append(f"version '{VERSION}' must look like 1.2.3")
if not re.fullmatch(r">= 0\.\d+\.\d+", API):
    problems.append(f"api_version '{API}' must look like '{NEEDS}'")
else:
    asked = tuple(int(x) for x in API[3:].split("."))
    needed = tuple(int(x) for x in NEEDS[3:].split("."))
    if asked[1] != needed[1]:
        problems.append(f"api_version '{API}' is of API generation 0.{asked[1]}; this template is written for "
                        f"0.{needed[1]} ('{NEEDS}')")
    elif asked < needed:
        problems.append(f"api_version '{API}' is older than what the template's code uses: it needs '{NEEDS}' "
                        "(a Gufo that old could not build it; raise it, never lower it)")

if problems:
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    sys.exit(1)
