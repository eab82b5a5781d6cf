#ifndef TAILSWEEP_CLI_CLI_APP_H_
#define TAILSWEEP_CLI_CLI_APP_H_

// CLI11's App, declared only: a header that names it need not pull in
// <CLI/CLI.hpp>, which costs every file that includes it about 7 CPU
// seconds to compile. Files that define options include CLI11 themselves.

namespace CLI {
class App;
}  // namespace CLI

#endif  // TAILSWEEP_CLI_CLI_APP_H_
