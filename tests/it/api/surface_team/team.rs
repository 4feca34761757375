//! `GET /v2/team/{team_id}`, `GET /v2/team/{team_id}/physicians` and
//! `GET /v2/team/users/search?query_id=` on the real server: a key reads only its own team,
//! physicians come from the team's orders, search matches an id's start or part of a
//! `client_user_id` in any case, and every answer parses with the reference's models.

use serde_json::{Value, json};

use super::{Live, case, check_against_reference};

async fn team_id(live: &Live, key: &str) -> String {
    let user = live.user(key, "probe").await;
    let a = live
        .call("GET", &format!("/v2/user/{user}"), Some(key), None)
        .await;
    a.json["team_id"].as_str().unwrap().to_owned()
}

fn order_body(user: &str, test: &str, npi: &str, last: &str) -> Value {
    json!({
        "user_id": user,
        "patient_details": {"first_name": "Ada", "last_name": "Lovelace", "dob": "1985-12-10",
            "gender": "female", "phone_number": "+16025550123", "email": "ada@example.com"},
        "patient_address": {"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ",
            "zip": "85004", "country": "US"},
        "order_set": {"lab_test_ids": [test]},
        "physician": {"first_name": "Gregory", "last_name": last, "npi": npi}
    })
}

#[tokio::test]
async fn a_key_reads_its_own_team_its_physicians_and_searches_its_users() {
    let live = Live::start("warn");
    let (key, other) = (live.key.clone(), live.other.clone());
    let mine = team_id(&live, &key).await;
    let theirs = team_id(&live, &other).await;
    let mut cases = Vec::new();

    // The team.
    let a = live.get(&format!("/v2/team/{mine}")).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["id"], mine.as_str());
    assert_eq!(a.json["name"], "acme");
    for secret in ["api_key", "api_keys", "client_secret", "webhook_secret"] {
        assert!(a.json[secret].is_null(), "{secret}: {}", a.json);
    }
    assert!(!a.bytes.windows(3).any(|w| w == b"wh_"), "a key leaked");
    cases.push(case(
        "team",
        "ClientFacingTeam",
        Some("ClientFacingTeam"),
        &a.json,
    ));
    // Another team's id is unknown; a malformed one is a 422 naming the parameter.
    let a = live.get(&format!("/v2/team/{theirs}")).await;
    assert_eq!(a.status, 404, "{}", a.json);
    assert_eq!(a.json["detail"], "Team not found");
    let a = live
        .call("GET", &format!("/v2/team/{theirs}"), Some(&other), None)
        .await;
    assert_eq!(a.json["name"], "globex");
    let a = live.get("/v2/team/not-a-uuid").await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert_eq!(a.json["detail"][0]["loc"], json!(["path", "team_id"]));
    assert_eq!(
        live.call("GET", &format!("/v2/team/{mine}"), None, None)
            .await
            .status,
        401
    );

    // Physicians: none before an order names one; then one per NPI, the latest name kept.
    let a = live.get(&format!("/v2/team/{mine}/physicians")).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json, json!([]));
    let user = live.user(&key, "patient-1").await;
    let tests = live.get("/v3/lab_tests").await.json;
    let test = tests.as_array().unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for (npi, last) in [
        ("1234567893", "House"),
        ("1245319599", "Wilson"),
        ("1234567893", "House-Cuddy"),
    ] {
        let a = live
            .post("/v3/order", order_body(&user, &test, npi, last))
            .await;
        assert_eq!(a.status, 200, "{}", a.json);
    }
    let a = live.get(&format!("/v2/team/{mine}/physicians")).await;
    assert_eq!(
        a.json,
        json!([
            {"first_name": "Gregory", "last_name": "House-Cuddy", "npi": "1234567893"},
            {"first_name": "Gregory", "last_name": "Wilson", "npi": "1245319599"}
        ])
    );
    for (i, p) in a.json.as_array().unwrap().iter().enumerate() {
        cases.push(case(
            &format!("physician {i}"),
            "ClientFacingPhysician",
            Some("ClientFacingPhysician"),
            p,
        ));
    }
    let a = live.get(&format!("/v2/team/{theirs}/physicians")).await;
    assert_eq!(a.status, 404, "{}", a.json);
    let a = live
        .call(
            "GET",
            &format!("/v2/team/{theirs}/physicians"),
            Some(&other),
            None,
        )
        .await;
    assert_eq!(a.json, json!([]), "the other team ordered nothing");

    // Search: an id's start, part of a client_user_id in any case; never another team's.
    let runner = live.user(&key, "Runner_42").await;
    live.user(&key, "walker-7").await;
    live.user(&other, "runner_43").await;
    let search = |q: String| {
        let live = &live;
        async move {
            let a = live
                .get(&format!("/v2/team/users/search?query_id={q}"))
                .await;
            assert_eq!(a.status, 200, "{q}: {}", a.json);
            a.json
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u["client_user_id"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(search("runner".into()).await, ["Runner_42"]);
    assert_eq!(search("ER_4".into()).await, ["Runner_42"]);
    assert_eq!(search(runner[..8].to_owned()).await, ["Runner_42"]);
    assert_eq!(search(runner.clone()).await, ["Runner_42"]);
    // `_` and `%` are characters, not wildcards.
    assert_eq!(search("r%5F4".into()).await, ["Runner_42"]);
    assert!(search("n%25".into()).await.is_empty());
    assert!(search("zz".into()).await.is_empty());
    let all = search("er".into()).await;
    assert!(all.contains(&"walker-7".to_owned()) && all.contains(&"Runner_42".to_owned()));
    assert!(!all.iter().any(|c| c == "runner_43"), "{all:?}");
    let a = live.get("/v2/team/users/search?query_id=runner").await;
    for (i, u) in a.json.as_array().unwrap().iter().enumerate() {
        assert_eq!(u["user_id"], runner.as_str());
        cases.push(case(
            &format!("user {i}"),
            "ClientFacingUser",
            Some("ClientFacingUser"),
            u,
        ));
    }
    let a = live.get("/v2/team/users/search?query_id=r").await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert_eq!(a.json["detail"][0]["loc"], json!(["query", "query_id"]));
    // Without a query: the team's users, oldest first.
    let a = live.get("/v2/team/users/search").await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert!(a.json.as_array().unwrap().len() >= 4, "{}", a.json);
    assert_eq!(a.json[0]["team_id"], mine.as_str());

    check_against_reference(&cases);
}
