//! Paging of the lab listings: a page number and size, and the rows they skip.

/// A page number and size from their query values: page ≥ 1, size 1–100 (checked by the HTTP
/// layer), and the rows to skip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Page, from 1.
    pub page: i64,
    /// Size.
    pub size: i64,
}

impl Page {
    /// Rows before the page.
    pub fn offset(self) -> i64 {
        (self.page - 1).saturating_mul(self.size)
    }

    /// ceil(total / size).
    pub fn pages(self, total: i64) -> i64 {
        (total + self.size - 1) / self.size
    }
}
