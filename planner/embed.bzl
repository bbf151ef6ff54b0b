"""Data files compiled in as C++ string literals."""

def embedded_json(name, srcs, out):
    """Writes `out`: one `{"<file name without .json>", R"(<text>)"},` per file.

    The including .cc file wraps it in a vector initializer.
    """
    native.genrule(
        name = name,
        srcs = srcs,
        outs = [out],
        cmd = "(for f in $(SRCS); do " +
              "printf '{\"%s\", R\"moetune_json(' $$(basename $$f .json); " +
              "cat $$f; printf ')moetune_json\"},\\n'; done) > $@",
    )
