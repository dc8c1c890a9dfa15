# Doxygen input filter (docs/Doxyfile, FILTER_PATTERNS): the headers' comments as Doxygen should read them, the
# files themselves unchanged. Doxygen ends a brief description at the first dot followed by a space, so in comment
# lines a range "0 .. n - 1" becomes "0 ‥ n - 1" (U+2025, which looks the same) and "e.g. " / "i.e. " get Doxygen's
# escaped space, "e.g.\ "; the row index "T_{k, .}" becomes "T_{k, ·}": the first sentence then stays whole.
/^[[:space:]]*\/\/\//{
  s/([^.])\.\.( |$)/\1‥\2/g
  s/(e\.g|i\.e)\. /\1.\\ /g
  s/, \.\}/, ·}/g
}
