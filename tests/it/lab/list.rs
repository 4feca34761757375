//! `GET /v3/orders`: each filter alone and combined, both directions of each sort key, the
//! bare-date rules, paging totals.

use serde_json::{Value, json};

use super::{order_body, sandbox_test, user, walk};
use crate::support::TestApp;

struct Fixture {
    app: TestApp,
    /// (id, user, patient "first last", method, status) in creation order.
    orders: Vec<(String, String, String, String, String)>,
    users: Vec<String>,
}

/// Seven orders: three users, four methods, several statuses and names, one scheduled, one
/// with a recipient name of its own.
async fn fixture() -> Fixture {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let users = vec![
        user(&app, "u-a").await,
        user(&app, "u-b").await,
        user(&app, "u-c").await,
    ];
    let plan: [(usize, &str, &str, &str, Option<&str>); 7] = [
        (0, "walk_in_test", "Ada", "Lovelace", None),
        (0, "testkit", "Grace", "Hopper", Some("transit_customer")),
        (
            1,
            "at_home_phlebotomy",
            "Alan",
            "Turing",
            Some("appointment_scheduled"),
        ),
        (1, "walk_in_test", "Barbara", "Liskov", Some("completed")),
        (
            2,
            "on_site_collection",
            "Edsger",
            "Dijkstra",
            Some("cancelled"),
        ),
        (2, "testkit", "Donald", "Knuth", None),
        (
            0,
            "walk_in_test",
            "Frances",
            "Allen",
            Some("requisition_created"),
        ),
    ];
    let mut orders = Vec::new();
    for (i, (u, method, first, last, to)) in plan.into_iter().enumerate() {
        let test = sandbox_test(&app, &key, method).await;
        let mut body = order_body(&users[u], &test);
        body["patient_details"]["first_name"] = json!(first);
        body["patient_details"]["last_name"] = json!(last);
        body["patient_details"]["dob"] = json!(format!("19{}0-0{}-15", 5 + i % 4, 1 + i));
        if i == 5 {
            body["activate_by"] = json!("2099-01-01");
            body["patient_address"]["receiver_name"] = json!("Jill Knuth-Receiver");
        }
        let created = app.post("/v3/order", body).await;
        assert_eq!(created.status, 200, "{}", created.json);
        let id = created.json["order"]["id"].as_str().unwrap().to_owned();
        let mut status = "ordered".to_owned();
        if let Some(to) = to {
            let a = walk(&app, &id, to).await;
            assert_eq!(a.status, 200, "{}", a.json);
            status = to.to_owned();
        }
        orders.push((
            id,
            users[u].clone(),
            format!("{first} {last}"),
            method.to_owned(),
            status,
        ));
    }
    Fixture { app, orders, users }
}

impl Fixture {
    async fn list(&self, query: &str) -> Value {
        let a = self.app.get(&format!("/v3/orders?size=100&{query}")).await;
        assert_eq!(a.status, 200, "{query}: {}", a.json);
        assert_eq!(
            a.json["orders"].as_array().unwrap().len() as i64,
            a.json["total"].as_i64().unwrap().min(100)
        );
        a.json
    }

    /// The ids a query answers, in order.
    async fn ids(&self, query: &str) -> Vec<String> {
        self.list(query).await["orders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["id"].as_str().unwrap().to_owned())
            .collect()
    }

    /// The fixture's ids whose row passes `keep`, in creation order.
    fn expect(
        &self,
        keep: impl Fn(usize, &(String, String, String, String, String)) -> bool,
    ) -> Vec<String> {
        self.orders
            .iter()
            .enumerate()
            .filter(|(i, o)| keep(*i, o))
            .map(|(_, o)| o.0.clone())
            .collect()
    }

    async fn same_set(&self, query: &str, mut want: Vec<String>) {
        let mut got = self.ids(query).await;
        got.sort();
        want.sort();
        assert_eq!(got, want, "{query}");
    }
}

#[tokio::test]
async fn each_filter_alone_and_combined() {
    let f = fixture().await;
    let all: Vec<String> = f.expect(|_, _| true);
    f.same_set("", all.clone()).await;
    // user_id
    f.same_set(
        &format!("user_id={}", f.users[1]),
        f.expect(|_, o| o.1 == f.users[1]),
    )
    .await;
    // status, repeated and comma-separated
    f.same_set("status=ordered", f.expect(|_, o| o.4 == "ordered"))
        .await;
    f.same_set(
        "status=completed&status=cancelled",
        f.expect(|_, o| o.4 == "completed" || o.4 == "cancelled"),
    )
    .await;
    f.same_set(
        "status=completed,cancelled",
        f.expect(|_, o| o.4 == "completed" || o.4 == "cancelled"),
    )
    .await;
    // order_type
    f.same_set("order_type=testkit", f.expect(|_, o| o.3 == "testkit"))
        .await;
    f.same_set(
        "order_type=testkit&order_type=on_site_collection",
        f.expect(|_, o| o.3 == "testkit" || o.3 == "on_site_collection"),
    )
    .await;
    // patient_name: case-insensitive substring
    f.same_set(
        "patient_name=LOVE",
        f.expect(|_, o| o.2.contains("Lovelace")),
    )
    .await;
    f.same_set(
        "patient_name=an",
        f.expect(|_, o| o.2.to_lowercase().contains("an")),
    )
    .await;
    // shipping_recipient_name (defaults to the patient)
    f.same_set("shipping_recipient_name=receiver", f.expect(|i, _| i == 5))
        .await;
    f.same_set("shipping_recipient_name=hopper", f.expect(|i, _| i == 1))
        .await;
    // order_activation_types
    f.same_set("order_activation_types=scheduled", f.expect(|i, _| i == 5))
        .await;
    f.same_set("order_activation_types=current", f.expect(|i, _| i != 5))
        .await;
    // order_ids
    let two = format!("order_ids={}&order_ids={}", f.orders[0].0, f.orders[3].0);
    f.same_set(&two, f.expect(|i, _| i == 0 || i == 3)).await;
    // order_transaction_id
    let one = f
        .app
        .get(&format!("/v3/order/{}", f.orders[2].0))
        .await
        .json;
    let tx = one["order_transaction"]["id"].as_str().unwrap();
    f.same_set(
        &format!("order_transaction_id={tx}"),
        f.expect(|i, _| i == 2),
    )
    .await;
    // is_critical / interpretation (only the completed order has results)
    let completed = f
        .app
        .get(&format!("/v3/order/{}", f.orders[3].0))
        .await
        .json;
    let interp = completed["interpretation"].as_str().unwrap().to_owned();
    let critical = completed["is_critical"].as_bool().unwrap();
    f.same_set(&format!("interpretation={interp}"), f.expect(|i, _| i == 3))
        .await;
    f.same_set(
        &format!("is_critical={critical}"),
        if critical {
            f.expect(|i, _| i == 3)
        } else {
            all.clone()
        },
    )
    .await;
    f.same_set(
        &format!("is_critical={}", !critical),
        if critical {
            f.expect(|i, _| i != 3)
        } else {
            vec![]
        },
    )
    .await;
    // search_input: order id prefix, user id prefix, patient name, date of birth, recipient
    f.same_set(
        &format!("search_input={}", &f.orders[4].0[..8]),
        f.expect(|i, _| i == 4),
    )
    .await;
    f.same_set(
        &format!("search_input={}", &f.users[2][..13]),
        f.expect(|_, o| o.1 == f.users[2]),
    )
    .await;
    f.same_set("search_input=TURING", f.expect(|i, _| i == 2))
        .await;
    f.same_set("search_input=1970-03-15", f.expect(|i, _| i == 2))
        .await;
    f.same_set("search_input=jill", f.expect(|i, _| i == 5))
        .await;
    f.same_set("search_input=%25", vec![]).await; // a literal %, not a wildcard
    // Combined: AND.
    f.same_set(
        &format!(
            "user_id={}&order_type=walk_in_test&status=ordered",
            f.users[0]
        ),
        f.expect(|_, o| o.1 == f.users[0] && o.3 == "walk_in_test" && o.4 == "ordered"),
    )
    .await;
    f.same_set(
        &format!(
            "user_id={}&order_type=walk_in_test&patient_name=allen",
            f.users[0]
        ),
        f.expect(|i, _| i == 6),
    )
    .await;
    f.same_set("status=completed&order_type=testkit", vec![])
        .await;
    // Another team sees none of them.
    let theirs = f
        .app
        .send("GET", "/v3/orders", Some(&f.app.other_key.clone()), None)
        .await
        .json;
    assert_eq!(theirs["total"], 0);
}

#[tokio::test]
async fn sorts_in_both_directions_on_each_key() {
    let f = fixture().await;
    let created: Vec<String> = f.expect(|_, _| true);
    let mut rev = created.clone();
    rev.reverse();
    assert_eq!(f.ids("").await, rev, "default: created_at desc");
    assert_eq!(
        f.ids("order_key=created_at&order_direction=desc").await,
        rev
    );
    assert_eq!(
        f.ids("order_key=created_at&order_direction=asc").await,
        created
    );
    let names = |o: &Value| -> Vec<String> {
        o["orders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| {
                format!(
                    "{} {}",
                    x["patient_details"]["first_name"].as_str().unwrap(),
                    x["patient_details"]["last_name"].as_str().unwrap()
                )
                .to_lowercase()
            })
            .collect()
    };
    let asc = names(&f.list("order_key=patient_name&order_direction=asc").await);
    let mut sorted = asc.clone();
    sorted.sort();
    assert_eq!(asc, sorted);
    assert_eq!(asc[0], "ada lovelace");
    let desc = names(&f.list("order_key=patient_name&order_direction=desc").await);
    sorted.reverse();
    assert_eq!(desc, sorted);
    let statuses = |o: &Value| -> Vec<String> {
        o["orders"]
            .as_array()
            .unwrap()
            .iter()
            .map(super::low)
            .collect()
    };
    let asc = statuses(&f.list("order_key=last_status&order_direction=asc").await);
    let mut s = asc.clone();
    s.sort();
    assert_eq!(asc, s);
    assert_eq!(asc[0], "appointment_scheduled");
    let desc = statuses(&f.list("order_key=last_status").await);
    s.reverse();
    assert_eq!(desc, s, "desc is the default direction");
}

#[tokio::test]
async fn bare_dates_and_date_times() {
    let f = fixture().await;
    let today = chrono::Utc::now().date_naive();
    let yesterday = today.pred_opt().unwrap();
    let tomorrow = today.succ_opt().unwrap();
    let all = f.expect(|_, _| true);
    // start_date: 00:00:00 of the day; end_date: 23:59:59 of the day.
    f.same_set(&format!("start_date={today}"), all.clone())
        .await;
    f.same_set(&format!("start_date={tomorrow}"), vec![]).await;
    f.same_set(&format!("end_date={today}"), all.clone()).await;
    f.same_set(&format!("end_date={yesterday}"), vec![]).await;
    f.same_set(&format!("start_date={today}&end_date={today}"), all.clone())
        .await;
    // updated_start_date 00:00:00; updated_end_date 00:00:00 as documented, so a bare
    // updated_end_date of today excludes what changed today.
    f.same_set(&format!("updated_start_date={today}"), all.clone())
        .await;
    f.same_set(&format!("updated_end_date={today}"), vec![])
        .await;
    f.same_set(&format!("updated_end_date={tomorrow}"), all.clone())
        .await;
    // Date-times are taken as given: from the fourth order's creation on.
    let fourth = f
        .app
        .get(&format!("/v3/order/{}", f.orders[3].0))
        .await
        .json;
    let at = fourth["created_at"].as_str().unwrap();
    let enc = |s: &str| s.replace('+', "%2B").replace(':', "%3A");
    f.same_set(&format!("start_date={}", enc(at)), f.expect(|i, _| i >= 3))
        .await;
    f.same_set(&format!("end_date={}", enc(at)), f.expect(|i, _| i <= 3))
        .await;
    let updated = fourth["updated_at"].as_str().unwrap();
    let instant = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
    let mut want = vec![];
    for o in &f.orders {
        let u = f.app.get(&format!("/v3/order/{}", o.0)).await.json;
        if instant(u["updated_at"].as_str().unwrap()) >= instant(updated) {
            want.push(o.0.clone());
        }
    }
    assert!(!want.is_empty() && want.len() < 7, "{want:?}");
    f.same_set(&format!("updated_start_date={}", enc(updated)), want)
        .await;
}

#[tokio::test]
async fn paging_totals() {
    let f = fixture().await;
    let all: Vec<String> = f.ids("order_direction=asc").await;
    let mut paged = Vec::new();
    for page in 1..=3 {
        let a = f
            .app
            .get(&format!(
                "/v3/orders?size=3&page={page}&order_direction=asc"
            ))
            .await
            .json;
        assert_eq!(a["total"], 7);
        assert_eq!(a["page"], page);
        assert_eq!(a["size"], 3);
        let n = a["orders"].as_array().unwrap().len();
        assert_eq!(n, if page < 3 { 3 } else { 1 });
        paged.extend(
            a["orders"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["id"].as_str().unwrap().to_owned()),
        );
    }
    assert_eq!(paged, all);
    let past = f.app.get("/v3/orders?size=3&page=4").await.json;
    assert_eq!(past["orders"], json!([]));
    assert_eq!(past["total"], 7);
    let filtered = f
        .app
        .get("/v3/orders?size=1&order_type=walk_in_test")
        .await
        .json;
    assert_eq!(filtered["total"], 3);
    assert_eq!(filtered["orders"].as_array().unwrap().len(), 1);
    let default = f.app.get("/v3/orders").await.json;
    assert_eq!(
        (default["page"].clone(), default["size"].clone()),
        (json!(1), json!(50))
    );
}
