//! How a failed command reads to an operator: `Error: <what and how to fix it>`, then each
//! cause once. Where in our source the error was made (eyre's `Location:`) and backtraces are
//! for developers and shown only with `--verbose` or `RUST_BACKTRACE`.

use std::fmt::Write as _;

/// Whether the person asked for internals: `--verbose`, or a `RUST_BACKTRACE` other than `0`.
pub fn wants_internals(verbose: bool) -> bool {
    verbose || std::env::var("RUST_BACKTRACE").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The text printed for `err`: the message, then every cause whose text the message before it
/// does not already carry (our errors often embed their source in their own message).
pub fn render(err: &eyre::Report, internals: bool) -> String {
    if internals {
        return format!("Error: {err:?}");
    }
    let mut out = format!("Error: {err}");
    let mut shown = err.to_string();
    let mut causes = Vec::new();
    for cause in err.chain().skip(1) {
        let text = cause.to_string();
        if !shown.contains(&text) {
            causes.push(text.clone());
        }
        shown.push('\n');
        shown.push_str(&text);
    }
    if !causes.is_empty() {
        out.push_str("\n\nCaused by:");
        for cause in causes {
            let _ = write!(out, "\n    {cause}");
        }
    }
    out.push_str("\n\n(run with --verbose for where in reth-hybrid this was raised)");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("disk full while writing SST file: free space, then rerun to resume")]
    struct Inner;

    #[derive(Debug, thiserror::Error)]
    #[error("migration of AccountsHistory failed")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("migration failed: {0}")]
    struct Embeds(#[source] Inner);

    #[test]
    fn shows_message_and_each_cause_without_locations() {
        let err = eyre::Report::new(Outer(Inner));
        let text = render(&err, false);
        assert!(
            text.starts_with("Error: migration of AccountsHistory failed"),
            "{text}"
        );
        assert!(text.contains("Caused by:\n    disk full"), "{text}");
        assert!(!text.contains("Location"), "{text}");
        assert!(!text.contains(".rs:"), "{text}");
    }

    #[test]
    fn a_cause_already_in_the_message_is_not_repeated() {
        let err = eyre::Report::new(Embeds(Inner));
        let text = render(&err, false);
        assert_eq!(text.matches("disk full").count(), 1, "{text}");
        assert!(!text.contains("Caused by"), "{text}");
    }

    #[test]
    fn internals_keep_eyres_report() {
        let err = eyre::Report::new(Outer(Inner));
        assert!(render(&err, true).contains("Location"));
    }
}
