//! The lab's PDF documents (requisition, results, collection instructions), written with
//! `pdf-writer`: US Letter pages of text lines, each line one or more cells at fixed x
//! positions (so a table's columns line up), a footer per page, and an optional drawing on the
//! first page. Standard Helvetica with WinAnsi encoding, so every PDF reader renders it and
//! text extractors read it back.

use pdf_writer::{Content, Finish, Name, Pdf, Rect, Ref, Str};

/// Page width (US Letter), in points.
pub const PAGE_W: f32 = 612.0;
/// Page height (US Letter), in points.
pub const PAGE_H: f32 = 792.0;
/// The left margin, where a plain line starts.
pub const LEFT: f32 = 54.0;
const LINES_PER_PAGE: usize = 52;

/// One line of text: its font size and its cells (x position, text).
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Font size in points.
    pub size: f32,
    /// Cells, each drawn from its x position.
    pub cells: Vec<(f32, String)>,
}

impl Line {
    /// A line of one cell at the left margin.
    pub fn text(size: f32, text: impl Into<String>) -> Line {
        Line {
            size,
            cells: vec![(LEFT, text.into())],
        }
    }

    /// An empty line of this height.
    pub fn blank(size: f32) -> Line {
        Line {
            size,
            cells: Vec::new(),
        }
    }

    /// A table row: `texts` drawn at the matching `columns`.
    pub fn row(size: f32, columns: &[f32], texts: Vec<String>) -> Line {
        Line {
            size,
            cells: columns.iter().copied().zip(texts).collect(),
        }
    }
}

/// Latin-1 bytes of `s` (WinAnsi agrees on the printable range); other characters become `?`.
pub fn latin1(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| {
            u8::try_from(u32::from(c))
                .ok()
                .filter(|b| *b >= 0x20)
                .unwrap_or(b'?')
        })
        .collect()
}

/// `s` cut to `max` characters (an ellipsis marks the cut), for a table cell.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        let kept: String = s.chars().take(max.saturating_sub(3)).collect();
        format!("{kept}...")
    }
}

/// The document: `lines` over as many pages as they need, `footer(page, pages)` at the foot of
/// each page, `first_page` drawn on the first one.
pub fn render(
    lines: &[Line],
    footer: &dyn Fn(usize, usize) -> String,
    first_page: &dyn Fn(&mut Content),
) -> Vec<u8> {
    let pages: Vec<&[Line]> = if lines.is_empty() {
        vec![&[]]
    } else {
        lines.chunks(LINES_PER_PAGE).collect()
    };
    let mut pdf = Pdf::new();
    let catalog = Ref::new(1);
    let tree = Ref::new(2);
    let font = Ref::new(3);
    let font_name = Name(b"F1");
    let page_ids: Vec<Ref> = (0..pages.len())
        .map(|i| Ref::new(10 + 2 * i32::try_from(i).unwrap_or(0)))
        .collect();
    pdf.catalog(catalog).pages(tree);
    pdf.pages(tree)
        .kids(page_ids.iter().copied())
        .count(i32::try_from(pages.len()).unwrap_or(1));
    pdf.type1_font(font)
        .base_font(Name(b"Helvetica"))
        .encoding_predefined(Name(b"WinAnsiEncoding"));
    for (i, chunk) in pages.iter().enumerate() {
        let page_id = page_ids[i];
        let content_id = Ref::new(page_id.get() + 1);
        let mut page = pdf.page(page_id);
        page.media_box(Rect::new(0.0, 0.0, PAGE_W, PAGE_H));
        page.parent(tree);
        page.contents(content_id);
        page.resources().fonts().pair(font_name, font);
        page.finish();
        let mut content = Content::new();
        let mut y = PAGE_H - 60.0;
        for line in chunk.iter() {
            for (x, text) in &line.cells {
                if text.is_empty() {
                    continue;
                }
                content.begin_text();
                content.set_font(font_name, line.size);
                content.next_line(*x, y);
                content.show(Str(&latin1(text)));
                content.end_text();
            }
            y -= line.size + 3.0;
        }
        if i == 0 {
            first_page(&mut content);
        }
        content.begin_text();
        content.set_font(font_name, 8.0);
        content.next_line(LEFT, 30.0);
        content.show(Str(&latin1(&footer(i + 1, pages.len()))));
        content.end_text();
        pdf.stream(content_id, &content.finish());
    }
    pdf.finish()
}
