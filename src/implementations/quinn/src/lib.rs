//! Start-up shared by `quinn-client` and `quinn-server`: the version flag, argument errors, the
//! TLS keylog and the single-threaded tokio runtime.

use std::path::Path;

/// Turns a parsed command line into options and a runtime: `Ok(None)` (the version flag) prints
/// the quinn version and exits 0, an argument error exits 2. A keylog path is handed to rustls'
/// `KeyLogFile` through `SSLKEYLOGFILE`, which must happen before any other thread exists.
pub fn start<T>(parsed: anyhow::Result<Option<T>>, keylog: impl Fn(&T) -> Option<&Path>) -> (T, tokio::runtime::Runtime) {
    let options = match parsed {
        Ok(Some(options)) => options,
        Ok(None) => {
            println!("{}", env!("QUINN_VERSION"));
            std::process::exit(0);
        }
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(2);
        }
    };
    if let Some(path) = keylog(&options) {
        // SAFETY: no other thread exists yet (the runtime is built below).
        unsafe { std::env::set_var("SSLKEYLOGFILE", path) };
    }
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    (options, runtime)
}
