//! What a request meets before the route answers it: a programmed fault, then the bearer-token
//! check; and what the tests read afterwards: the request log and timeline.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::http::{HeaderMap, header};

/// A request as the logs write it: `what?k=v&…`, the query's pairs sorted.
pub fn query_line(what: &str, query: &HashMap<String, String>) -> String {
    let mut pairs: Vec<_> = query.iter().map(|(k, v)| format!("{k}={v}")).collect();
    pairs.sort();
    format!("{what}?{}", pairs.join("&"))
}

/// The request's `Authorization: Bearer` token, whatever it is (a route that checks its own
/// kind of token, such as a sign-in's temporary ticket).
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
}

/// Which bearer tokens a fake accepts.
type TokenCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

struct State<F> {
    /// Faults to serve first, one each, in order.
    queued: VecDeque<F>,
    /// The fault, and the count of good answers from which it is served.
    fault: Option<(F, usize)>,
    /// Faults left to serve before the fake recovers (`None`: it never does).
    faults_left: Option<usize>,
    good: usize,
    accepts: TokenCheck,
    log: Vec<String>,
    /// Every faultable request's arrival, and whether a fault answered it.
    timeline: Vec<(Instant, bool)>,
}

/// A fake's faults, token check and request log; `F` is the provider's fault vocabulary (each
/// route table says how its provider answers each).
pub struct Gate<F> {
    state: Arc<Mutex<State<F>>>,
    malform: Arc<AtomicBool>,
}

impl<F> Clone for Gate<F> {
    fn clone(&self) -> Self {
        Gate {
            state: self.state.clone(),
            malform: self.malform.clone(),
        }
    }
}

impl<F: Copy + Send + 'static> Gate<F> {
    /// A gate accepting only `token`, serving no fault.
    pub fn new(token: &'static str) -> Gate<F> {
        Gate::accepting(move |t| t == token)
    }

    /// A gate accepting the bearer tokens `check` approves (a fake that issues its own, or
    /// whose routes take none), serving no fault.
    pub fn accepting(check: impl Fn(&str) -> bool + Send + Sync + 'static) -> Gate<F> {
        Gate {
            state: Arc::new(Mutex::new(State {
                queued: VecDeque::new(),
                fault: None,
                faults_left: None,
                good: 0,
                accepts: Arc::new(check),
                log: Vec::new(),
                timeline: Vec::new(),
            })),
            malform: Arc::default(),
        }
    }

    /// Accepts the bearer tokens `check` approves from now on: tests that link through an
    /// OAuth server accept the tokens it issued (an expired one refused, or none: revoked).
    pub fn accept_when(&self, check: impl Fn(&str) -> bool + Send + Sync + 'static) {
        self.state.lock().unwrap().accepts = Arc::new(check);
    }

    /// Serves `fault` from the request after the next `after` good ones, for good.
    pub fn fail(&self, fault: F, after: usize) {
        let mut state = self.state.lock().unwrap();
        state.fault = Some((fault, state.good + after));
        state.faults_left = None;
    }

    /// Serves `fault` `times` times (a storm) from the request after the next `after` good
    /// ones, then answers normally again.
    pub fn fail_times(&self, fault: F, after: usize, times: usize) {
        self.fail(fault, after);
        self.state.lock().unwrap().faults_left = Some(times.max(1));
    }

    /// Serves `faults` to the next requests, one each, in order, ahead of any fault
    /// [`Gate::fail`] programmed.
    pub fn fail_each(&self, faults: &[F]) {
        self.state
            .lock()
            .unwrap()
            .queued
            .extend(faults.iter().copied());
    }

    /// Slips a malformed record into the next answer that carries records.
    pub fn malform_next(&self) {
        self.malform.store(true, Ordering::SeqCst);
    }

    pub(super) fn malformer(&self) -> Arc<AtomicBool> {
        self.malform.clone()
    }

    /// Every request so far, as the route table wrote it ([`Gate::note`]).
    pub fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }

    /// Every faultable request so far: when it arrived, and whether a fault answered it.
    pub fn timeline(&self) -> Vec<(Instant, bool)> {
        self.state.lock().unwrap().timeline.clone()
    }

    /// Logs a request as `line`.
    pub fn note(&self, line: impl Into<String>) {
        self.state.lock().unwrap().log.push(line.into());
    }

    /// Logs a request as `what?k=v&…`, its query sorted ([`query_line`]).
    pub fn note_query(&self, what: &str, query: &HashMap<String, String>) {
        self.note(query_line(what, query));
    }

    /// The fault this request meets, if any; a request no fault meets is a good answer.
    pub fn meet(&self) -> Option<F> {
        let mut state = self.state.lock().unwrap();
        if let Some(fault) = state.queued.pop_front() {
            state.timeline.push((Instant::now(), true));
            return Some(fault);
        }
        let fault = match state.fault {
            Some((fault, at)) if state.good >= at => {
                if let Some(left) = state.faults_left.as_mut() {
                    *left -= 1;
                    if *left == 0 {
                        state.fault = None;
                        state.faults_left = None;
                    }
                }
                Some(fault)
            }
            _ => {
                state.good += 1;
                None
            }
        };
        state.timeline.push((Instant::now(), fault.is_some()));
        fault
    }

    /// Whether `token` is one the fake accepts.
    pub fn accepts(&self, token: &str) -> bool {
        let check = self.state.lock().unwrap().accepts.clone();
        check(token)
    }

    /// The request's `Authorization: Bearer` token, when it is one the fake accepts.
    pub fn bearer(&self, headers: &HeaderMap) -> Option<String> {
        bearer_token(headers)
            .filter(|t| self.accepts(t))
            .map(str::to_owned)
    }

    /// Whether the request's `Authorization: Bearer` token is one the fake accepts.
    pub fn bearer_ok(&self, headers: &HeaderMap) -> bool {
        self.bearer(headers).is_some()
    }
}
