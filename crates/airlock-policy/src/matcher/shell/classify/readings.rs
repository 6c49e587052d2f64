//! The readings of one command line: one, or one per item of a loop over known items,
//! each cut into segments by the POSIX or the PowerShell reader.

use super::*;

/// Command lines longer than this are lexed once, whatever loops they hold: a loop over
/// several items is read item by item only in lines short enough to lex that often.
const MAX_READ_PER_ITEM_BYTES: usize = 16 * 1024;

/// The segments of `command`, once per reading: one reading, or, for a line with a loop
/// over several known items (`for f in a.md b.md; do …`), one per item, its variable read
/// as that item (`lex/loops.rs`). Every reading is judged; the strictest decides. A call
/// made on Windows reads backslashes in words as path separators; a PowerShell line (or
/// any line of a call whose shell is PowerShell) is read by `powershell.rs`.
pub(super) fn readings(command: &str, windows: bool, powershell: bool) -> Vec<Vec<Segment>> {
    if powershell || super::super::powershell::looks_like_powershell(command, windows) {
        return vec![super::super::powershell::segments(command, 0)
            .unwrap_or_else(|| vec![Segment::unknowable()])];
    }
    match parse_command_reading(command, 0, None, windows) {
        Ok((segments, Some((name, count)))) if command.len() <= MAX_READ_PER_ITEM_BYTES => {
            let per_item: Result<Vec<Vec<Segment>>, LexError> = (0..count)
                .map(|index| {
                    parse_command_reading(command, 0, Some((name.clone(), index)), windows)
                        .map(|(segments, _)| segments)
                })
                .collect();
            per_item.unwrap_or_else(|_| vec![segments])
        }
        Ok((segments, _)) => vec![segments],
        Err(LexError::TooDeep) => vec![vec![Segment::unknowable()]],
        Err(_) => vec![crude_segments(command)],
    }
}
