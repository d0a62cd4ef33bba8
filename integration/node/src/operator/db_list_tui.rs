//! `db list`'s interactive viewer on a terminal: one page of rows at a time, the keys on the left,
//! the selected row's value on the right, each page fetched through the router when the user moves
//! to it. A RocksDB table's size is RocksDB's estimate, so opening the viewer reads no table whole.

use ratatui::{
    Terminal,
    backend::CrosstermBackend,
    crossterm::{
        event::{self, Event, KeyCode, KeyEventKind, KeyModifiers},
        execute,
        terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode},
    },
    layout::{Constraint, Layout},
    style::{Modifier, Style},
    text::Line,
    widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap},
};
use std::{io, time::Duration};

/// One row as shown: the key on one line, the value pretty-printed.
pub struct ShownRow {
    pub key: String,
    pub value: String,
}

/// Keys and what they do, shown at the bottom.
const HELP: &str = "q quit | ↑/↓ row | ←/→ page | g go to page";

/// The pager's state, apart from the terminal: which page, which row, what is being typed.
pub struct Pager {
    table: String,
    total: usize,
    /// `total` is an estimate (a RocksDB table): paging goes on while pages come back full.
    estimated: bool,
    page_len: usize,
    /// Index of the first row of the current page.
    start: usize,
    rows: Vec<ShownRow>,
    selected: usize,
    /// Digits typed after `g`, `None` outside that mode.
    goto: Option<String>,
    message: Option<String>,
}

/// What a key did.
#[derive(Debug, PartialEq, Eq)]
enum Step {
    Stay,
    /// Fetch the page starting at this row.
    Fetch(usize),
    Quit,
}

impl Pager {
    pub fn new(table: &str, total: usize, estimated: bool, start: usize, page_len: usize) -> Self {
        Self {
            table: table.to_string(),
            total,
            estimated,
            page_len: page_len.max(1),
            start,
            rows: Vec::new(),
            selected: 0,
            goto: None,
            message: None,
        }
    }

    fn pages(&self) -> usize {
        self.total.div_ceil(self.page_len).max(1)
    }

    fn page(&self) -> usize {
        self.start / self.page_len + 1
    }

    fn set_rows(&mut self, start: usize, rows: Vec<ShownRow>) {
        // Past an estimated end: stay on the last page that had rows.
        if rows.is_empty() && start > 0 {
            self.message = Some(format!(
                "no rows after row {}",
                self.start + self.rows.len()
            ));
            return;
        }
        self.start = start;
        self.selected = self.selected.min(rows.len().saturating_sub(1));
        self.rows = rows;
    }

    fn on_key(&mut self, key: KeyCode) -> Step {
        self.message = None;
        if let Some(typed) = &mut self.goto {
            match key {
                KeyCode::Char(c) if c.is_ascii_digit() => typed.push(c),
                KeyCode::Backspace => {
                    typed.pop();
                }
                KeyCode::Esc => self.goto = None,
                KeyCode::Enter => {
                    let typed = self.goto.take().unwrap_or_default();
                    match typed.parse::<usize>() {
                        Ok(page) if (1..=self.pages()).contains(&page) => {
                            self.selected = 0;
                            return Step::Fetch((page - 1) * self.page_len);
                        }
                        _ => {
                            self.message =
                                Some(format!("no page {typed:?}: pages are 1..={}", self.pages()))
                        }
                    }
                }
                _ => {}
            }
            return Step::Stay;
        }
        match key {
            KeyCode::Char('q') | KeyCode::Esc => Step::Quit,
            KeyCode::Down | KeyCode::Char('j') => {
                if self.selected + 1 < self.rows.len() {
                    self.selected += 1;
                    Step::Stay
                } else {
                    self.next_page()
                }
            }
            KeyCode::Up | KeyCode::Char('k') => {
                if self.selected > 0 {
                    self.selected -= 1;
                    Step::Stay
                } else {
                    self.previous_page(true)
                }
            }
            KeyCode::Right | KeyCode::PageDown | KeyCode::Char('l') => self.next_page(),
            KeyCode::Left | KeyCode::PageUp | KeyCode::Char('h') => self.previous_page(false),
            KeyCode::Char('g') | KeyCode::Char('G') => {
                self.goto = Some(String::new());
                Step::Stay
            }
            _ => Step::Stay,
        }
    }

    fn next_page(&mut self) -> Step {
        let next = self.start + self.page_len;
        let more = next < self.total || (self.estimated && self.rows.len() == self.page_len);
        if !more {
            return Step::Stay;
        }
        self.selected = 0;
        Step::Fetch(next)
    }

    /// `to_last_row`: moving up from a page's first row lands on the previous page's last one.
    fn previous_page(&mut self, to_last_row: bool) -> Step {
        if self.start == 0 {
            return Step::Stay;
        }
        self.selected = if to_last_row { self.page_len - 1 } else { 0 };
        Step::Fetch(self.start.saturating_sub(self.page_len))
    }

    fn draw(&self, frame: &mut ratatui::Frame<'_>) {
        let [title, body, footer] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let last = (self.start + self.rows.len()).min(self.total);
        frame.render_widget(
            Paragraph::new(format!(
                "{}: rows {}..{} of {}{} | page {} of {}{}",
                self.table,
                self.start + usize::from(!self.rows.is_empty()),
                last.max(self.start + self.rows.len()),
                if self.estimated { "~" } else { "" },
                self.total,
                self.page(),
                if self.estimated { "~" } else { "" },
                self.pages()
            ))
            .style(Style::default().add_modifier(Modifier::BOLD)),
            title,
        );
        let [keys, value] =
            Layout::horizontal([Constraint::Percentage(40), Constraint::Percentage(60)])
                .areas(body);
        let items: Vec<ListItem<'_>> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| ListItem::new(format!("{} {}", self.start + i, row.key)))
            .collect();
        let mut state = ListState::default();
        state.select((!self.rows.is_empty()).then_some(self.selected));
        frame.render_stateful_widget(
            List::new(items)
                .block(Block::default().borders(Borders::ALL).title("Keys"))
                .highlight_style(Style::default().add_modifier(Modifier::REVERSED))
                .highlight_symbol("> "),
            keys,
            &mut state,
        );
        let shown = self
            .rows
            .get(self.selected)
            .map(|row| row.value.as_str())
            .unwrap_or("(no rows)");
        frame.render_widget(
            Paragraph::new(shown)
                .block(Block::default().borders(Borders::ALL).title("Value"))
                .wrap(Wrap { trim: false }),
            value,
        );
        let footer_text = match (&self.goto, &self.message) {
            (Some(typed), _) => format!("go to page (1..={}): {typed}_", self.pages()),
            (None, Some(message)) => message.clone(),
            (None, None) => HELP.to_string(),
        };
        frame.render_widget(Paragraph::new(Line::from(footer_text)), footer);
    }
}

/// Raw mode and the alternate screen, left again when dropped: on return, on error and while a
/// panic unwinds (reth's `DbTool::list` panics on a row it cannot decode).
struct RawScreen;

impl RawScreen {
    fn enter() -> eyre::Result<Self> {
        enable_raw_mode()?;
        let screen = Self;
        execute!(io::stdout(), EnterAlternateScreen)?;
        Ok(screen)
    }
}

impl Drop for RawScreen {
    fn drop(&mut self) {
        let _ = execute!(io::stdout(), LeaveAlternateScreen);
        let _ = disable_raw_mode();
    }
}

/// Runs the viewer until `q` (or Ctrl-C); `fetch(start, len)` reads a page.
pub fn run(
    mut pager: Pager,
    mut fetch: impl FnMut(usize, usize) -> eyre::Result<Vec<ShownRow>>,
) -> eyre::Result<()> {
    let first = fetch(pager.start, pager.page_len)?;
    pager.set_rows(pager.start, first);
    let _screen = RawScreen::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    loop {
        terminal.draw(|frame| pager.draw(frame))?;
        if !event::poll(Duration::from_millis(250))? {
            continue;
        }
        let Event::Key(key) = event::read()? else {
            continue;
        };
        if key.kind != KeyEventKind::Press {
            continue;
        }
        // Raw mode turns Ctrl-C into a key: it quits, as everywhere else.
        let step = match (key.code, key.modifiers.contains(KeyModifiers::CONTROL)) {
            (KeyCode::Char('c'), true) => Step::Quit,
            (code, _) => pager.on_key(code),
        };
        match step {
            Step::Stay => {}
            Step::Quit => return Ok(()),
            Step::Fetch(start) => {
                let rows = fetch(start, pager.page_len)?;
                pager.set_rows(start, rows);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(start: usize, len: usize, total: usize) -> Vec<ShownRow> {
        (start..(start + len).min(total))
            .map(|i| ShownRow {
                key: i.to_string(),
                value: format!("value {i}"),
            })
            .collect()
    }

    /// Drives the pager with keys over a table of `total` rows, fetching as `run` does.
    fn drive(total: usize, page_len: usize, keys: &[KeyCode]) -> Pager {
        drive_estimated(total, total, false, page_len, keys)
    }

    /// As `drive`, with the pager told `shown_total` (an estimate when `estimated`).
    fn drive_estimated(
        total: usize,
        shown_total: usize,
        estimated: bool,
        page_len: usize,
        keys: &[KeyCode],
    ) -> Pager {
        let mut pager = Pager::new("T", shown_total, estimated, 0, page_len);
        pager.set_rows(0, rows(0, page_len, total));
        for &key in keys {
            match pager.on_key(key) {
                Step::Fetch(start) => pager.set_rows(start, rows(start, page_len, total)),
                Step::Stay | Step::Quit => {}
            }
        }
        pager
    }

    #[test]
    fn an_estimated_total_pages_on_while_pages_are_full() {
        // RocksDB estimated 4 rows of 9: paging reaches the real last page, then stays there.
        let right = [KeyCode::Right; 4];
        let pager = drive_estimated(9, 4, true, 3, &right);
        assert_eq!((pager.start, pager.rows.len()), (6, 3));
        assert!(
            pager
                .message
                .as_deref()
                .unwrap_or("")
                .contains("no rows after row 9")
        );
        // An exact total stops at its last page.
        let pager = drive_estimated(9, 4, false, 3, &right);
        assert_eq!(pager.start, 3);
    }

    #[test]
    fn pages_move_within_the_table() {
        let pager = drive(7, 3, &[KeyCode::Right, KeyCode::Right, KeyCode::Right]);
        assert_eq!((pager.start, pager.rows.len(), pager.page()), (6, 1, 3));
        let pager = drive(7, 3, &[KeyCode::Left, KeyCode::Right, KeyCode::Left]);
        assert_eq!(pager.start, 0);
    }

    #[test]
    fn rows_run_across_page_boundaries() {
        let pager = drive(7, 3, &[KeyCode::Down, KeyCode::Down, KeyCode::Down]);
        assert_eq!((pager.start, pager.selected), (3, 0));
        let pager = drive(7, 3, &[KeyCode::Right, KeyCode::Up]);
        assert_eq!(
            (
                pager.start,
                pager.selected,
                pager.rows[pager.selected].key.as_str()
            ),
            (0, 2, "2")
        );
        // The last page's last row stays selected; the first page's first row too.
        let pager = drive(
            7,
            3,
            &[KeyCode::Right, KeyCode::Right, KeyCode::Down, KeyCode::Down],
        );
        assert_eq!((pager.start, pager.selected), (6, 0));
        let pager = drive(7, 3, &[KeyCode::Up]);
        assert_eq!((pager.start, pager.selected), (0, 0));
    }

    #[test]
    fn go_to_page_takes_only_pages_that_exist() {
        let keys = [KeyCode::Char('g'), KeyCode::Char('3'), KeyCode::Enter];
        assert_eq!(drive(7, 3, &keys).start, 6);
        let keys = [KeyCode::Char('g'), KeyCode::Char('4'), KeyCode::Enter];
        let pager = drive(7, 3, &keys);
        assert_eq!(pager.start, 0);
        assert!(
            pager
                .message
                .as_deref()
                .unwrap_or("")
                .contains("pages are 1..=3")
        );
        let keys = [
            KeyCode::Char('g'),
            KeyCode::Char('2'),
            KeyCode::Esc,
            KeyCode::Right,
        ];
        assert_eq!(drive(7, 3, &keys).start, 3);
    }

    #[test]
    fn q_quits() {
        let mut pager = drive(7, 3, &[]);
        assert_eq!(pager.on_key(KeyCode::Char('q')), Step::Quit);
    }
}
