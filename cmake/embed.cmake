# Writes OUT, a C++ file defining `const std::string_view NAME` in namespace
# tailsweep::NAMESPACE holding the bytes of INPUT, at build time (the
# report's assets, the store's SQL).
# cmake -DINPUT=file -DOUT=file.cc -DNAME=kName -DNAMESPACE=ns -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
string(REGEX REPLACE "(('\\\\x..',){32})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}"
  "// Generated from ${INPUT} by cmake/embed.cmake: do not edit.\n"
  "#include <string_view>\n"
  "namespace tailsweep::${NAMESPACE} {\n"
  "static const char kBytes[] = {\n${bytes}'\\0'};\n"
  "extern const std::string_view ${NAME}(kBytes, sizeof kBytes - 1);\n"
  "}  // namespace tailsweep::${NAMESPACE}\n")
