"""Libraries outside torch whose results never hold an autograd graph: numbers, arrays, strings,
scores (`math.exp`, `np.mean`, `sklearn.metrics.f1_score`). A value that comes out of one of them
ends whatever graph went in."""

NUMERIC_LIBRARIES = frozenset({
    "numpy", "math", "random", "scipy", "time", "os", "statistics", "sys", "argparse",
    "sklearn", "pandas", "nltk", "sacrebleu", "evaluate", "rouge_score", "jiwer", "editdistance",
    "Levenshtein", "pycocotools", "seqeval", "bert_score",
    # the standard library's text and serialisation modules: strings in, strings out
    "re", "json", "string", "textwrap", "difflib", "unicodedata",
    # configuration files and paths: settings, never tensors
    "yaml", "toml", "tomli", "tomllib", "configparser", "csv", "pathlib", "glob",
})


def numeric_origin(origin: str) -> bool:
    """`sklearn.metrics` -> True: the import's top package is one of those libraries."""
    return origin.split(".", 1)[0] in NUMERIC_LIBRARIES
