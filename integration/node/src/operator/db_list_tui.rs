//! `db list`'s interactive viewer on a terminal: one page of rows at a time, the keys on the left,
//! the selected row's value on the right, pages fetched through the router as the user moves, so a
//! table of billions of rows (in either engine) is browsed without reading it whole.

use ratatui::{
    Terminal,
    backend::CrosstermBackend,
    crossterm::{
        event::{self, Event, KeyCode, KeyEventKind},
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
    pub fn new(table: &str, total: usize, start: usize, page_len: usize) -> Self {
        Self {
            table: table.to_string(),
            total,
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
        if next >= self.total {
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
                "{}: rows {}..{} of {} | page {} of {}",
                self.table,
                self.start + usize::from(!self.rows.is_empty()),
                last,
                self.total,
                self.page(),
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

/// Runs the viewer until `q`; `fetch(start, len)` reads a page. The terminal is restored however
/// the loop ends.
pub fn run(
    mut pager: Pager,
    mut fetch: impl FnMut(usize, usize) -> eyre::Result<Vec<ShownRow>>,
) -> eyre::Result<()> {
    let first = fetch(pager.start, pager.page_len)?;
    pager.set_rows(pager.start, first);
    enable_raw_mode()?;
    let mut stdout = io::stdout();
    if let Err(e) = execute!(stdout, EnterAlternateScreen) {
        let _ = disable_raw_mode();
        return Err(e.into());
    }
    let result = (|| -> eyre::Result<()> {
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
            match pager.on_key(key.code) {
                Step::Stay => {}
                Step::Quit => return Ok(()),
                Step::Fetch(start) => {
                    let rows = fetch(start, pager.page_len)?;
                    pager.set_rows(start, rows);
                }
            }
        }
    })();
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), LeaveAlternateScreen);
    result
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
        let mut pager = Pager::new("T", total, 0, page_len);
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
