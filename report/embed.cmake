# Writes OUT, a C++ file defining `const std::string_view NAME` holding the
# bytes of INPUT, at build time: report_assets.cc is made of these.
# cmake -DINPUT=file -DOUT=file.cc -DNAME=kName -P embed.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
string(REGEX REPLACE "(('\\\\x..',){32})" "\\1\n" bytes "${bytes}")
file(WRITE "${OUT}"
  "// Generated from ${INPUT} by report/embed.cmake: do not edit.\n"
  "#include <string_view>\n"
  "namespace tailsweep::report_assets {\n"
  "static const char kBytes[] = {\n${bytes}'\\0'};\n"
  "extern const std::string_view ${NAME}(kBytes, sizeof kBytes - 1);\n"
  "}  // namespace tailsweep::report_assets\n")
