"""The rules of an EXP-Bench answer ({"design": text(s), "conclusion": text}); the gym's checker.

This file runs as the pristine validator of an EXP-Bench gym task
(`python3 -I validate.py ANSWER.json`), so it imports nothing but the standard library. The checker
gives no score: an EXP-Bench answer is judged after the run.
"""

from __future__ import annotations

import json
import sys
from typing import Any

KEYS = ("design", "conclusion")


def errors(answer: Any) -> list[str]:
    """List what makes an answer unusable.

    Args:
        answer: The parsed answer.

    Returns:
        The problems; empty when the answer is well formed.
    """
    if not isinstance(answer, dict):
        return ["the answer must be a JSON object with the keys design and conclusion"]
    found = []
    if set(answer) != set(KEYS):
        found.append(f"the answer must hold exactly the keys {list(KEYS)}, got {sorted(answer)}")
    design = answer.get("design")
    texts = design if isinstance(design, list) else [design]
    if not texts or not all(isinstance(t, str) and t.strip() for t in texts):
        found.append("design must be a non-empty text or a non-empty list of non-empty texts")
    conclusion = answer.get("conclusion")
    if not (isinstance(conclusion, str) and conclusion.strip()):
        found.append("conclusion must be a non-empty text")
    return found


def check_bytes(content: bytes) -> dict[str, Any]:
    """Give the checker's verdict on a candidate file's bytes: valid or not, never a score.

    Args:
        content: The file's bytes.

    Returns:
        {"valid", "score": None, "errors"}.
    """
    try:
        answer = json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        return {"valid": False, "score": None, "errors": [f"not a JSON document: {error}"]}
    problems = errors(answer)
    return {"valid": not problems, "score": None, "errors": problems}


def main() -> None:
    """Check the file named on the command line; print the verdict as JSON, exit 0 iff valid."""
    with open(sys.argv[1], "rb") as handle:
        verdict = check_bytes(handle.read(5_000_000))
    print(json.dumps(verdict))
    sys.exit(0 if verdict["valid"] else 1)


if __name__ == "__main__":
    main()
