//! Opaque next-page tokens: a provider's page answers a token naming where the next page of one
//! listing starts, and refuses a token it did not issue for that listing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The tokens a fake issued: token → (listing, offset of the next page).
#[derive(Clone)]
pub struct Pager {
    spell: fn(usize) -> String,
    issued: Arc<Mutex<HashMap<String, (String, usize)>>>,
}

impl Pager {
    /// A pager whose `n`-th token is `spell(n)` (each provider's tokens look its own).
    pub fn new(spell: fn(usize) -> String) -> Pager {
        Pager {
            spell,
            issued: Arc::default(),
        }
    }

    /// Where the page of `listing` asked with `token` starts: 0 without one, `None` for a token
    /// not issued for `listing`.
    pub fn offset(&self, listing: &str, token: Option<&String>) -> Option<usize> {
        let Some(token) = token else {
            return Some(0);
        };
        match self.issued.lock().unwrap().get(token) {
            Some((l, offset)) if l == listing => Some(*offset),
            _ => None,
        }
    }

    /// The page of `items` from `offset`, at most `size` long, and the token of the next page
    /// when items remain.
    pub fn page<T: Clone>(
        &self,
        listing: &str,
        items: &[T],
        offset: usize,
        size: usize,
    ) -> (Vec<T>, Option<String>) {
        let page: Vec<T> = items.iter().skip(offset).take(size).cloned().collect();
        let next = offset + page.len();
        if next >= items.len() {
            return (page, None);
        }
        let mut issued = self.issued.lock().unwrap();
        let token = (self.spell)(issued.len());
        issued.insert(token.clone(), (listing.to_owned(), next));
        (page, Some(token))
    }
}
