//! `mcd-inject`: the command line. Parsing, running and exit codes are in the library
//! (`src/cmdline/`), which keeps its command-line types private: the library's API is
//! the plain config structs the command line turns into (docs/architecture.md).

fn main() -> std::process::ExitCode {
    mcd_inject::run_cli()
}
