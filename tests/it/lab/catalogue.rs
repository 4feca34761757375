//! The catalogue: labs, markers (LOINC, units, expected results), paging totals, the four
//! sandbox lab tests, lab tests' cursor pages.

use serde_json::json;

use crate::support::TestApp;

#[tokio::test]
async fn labs_and_markers() {
    let app = TestApp::new().await;
    let labs = app.get("/v3/lab_tests/labs").await.json;
    let slugs: Vec<&str> = labs
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["quest", "labcorp", "bioreference", "sonora_quest"]);
    for l in labs.as_array().unwrap() {
        assert!(!l["collection_methods"].as_array().unwrap().is_empty());
        assert!(!l["sample_types"].as_array().unwrap().is_empty());
        assert!(l["zipcode"].as_str().unwrap().len() == 5);
    }
    let page = app
        .get("/v3/lab_tests/markers?lab_id=1&size=100")
        .await
        .json;
    let total = page["total"].as_i64().unwrap();
    assert!(total >= 100, "{total}");
    assert_eq!(page["pages"], (total + 99) / 100);
    assert_eq!(page["markers"].as_array().unwrap().len(), 100);
    let m = &page["markers"][0];
    assert_eq!(m["loinc"]["code"], "2093-3");
    assert_eq!(m["unit"], "mg/dL");
    assert_eq!(m["type"], "biomarker");
    assert_eq!(m["price"], "9.00");
    assert_eq!(m["expected_results"][0]["loinc"]["code"], "2093-3");
    // The last page holds the rest; past it is empty but still counts.
    let last = app
        .get(&format!(
            "/v3/lab_tests/markers?lab_id=1&size=100&page={}",
            page["pages"]
        ))
        .await
        .json;
    assert_eq!(
        last["markers"].as_array().unwrap().len() as i64,
        total - 100
    );
    let past = app
        .get("/v3/lab_tests/markers?lab_id=1&size=100&page=99")
        .await
        .json;
    assert_eq!(past["markers"].as_array().unwrap().len(), 0);
    assert_eq!(past["total"], total);
    // All labs together, by name.
    let all = app.get("/v3/lab_tests/markers").await.json;
    assert_eq!(all["total"], total * 4);
    assert_eq!(all["size"], 50);
    assert_eq!(all["page"], 1);
    let lipid = app
        .get("/v3/lab_tests/markers?name=LIPID%20panel&lab_id=2")
        .await
        .json;
    assert_eq!(lipid["total"], 1, "{lipid}");
    let panel = &lipid["markers"][0];
    assert_eq!(panel["type"], "panel");
    assert_eq!(panel["loinc"]["code"], "24331-1");
    let results: Vec<&str> = panel["expected_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["loinc"]["code"].as_str().unwrap())
        .collect();
    assert!(
        results.contains(&"2085-9") && results.contains(&"2571-8"),
        "{results:?}"
    );
    assert_eq!(app.get("/v3/lab_tests/markers?lab_id=9").await.status, 422);
}

#[tokio::test]
async fn sandbox_tests_and_cursor_pages() {
    let app = TestApp::new().await;
    let all = app.get("/v3/lab_tests").await.json;
    let methods: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods.len(), 4, "{all}");
    for m in [
        "testkit",
        "walk_in_test",
        "at_home_phlebotomy",
        "on_site_collection",
    ] {
        assert!(methods.contains(&m), "{m}");
    }
    // Created once: asking again does not add more; the other team has its own four.
    assert_eq!(
        app.get("/v3/lab_tests")
            .await
            .json
            .as_array()
            .unwrap()
            .len(),
        4
    );
    let theirs = app
        .send("GET", "/v3/lab_tests", Some(&app.other_key.clone()), None)
        .await
        .json;
    assert_eq!(theirs.as_array().unwrap().len(), 4);
    assert_ne!(theirs[0]["id"], all[0]["id"]);
    for i in 0..3 {
        let made = app
            .post("/v3/lab_tests", json!({"name": format!("Mine {i}"), "description": "d", "method": "walk_in_test", "marker_ids": [1001 + i], "fasting": true}))
            .await;
        assert_eq!(made.status, 200, "{}", made.json);
        assert_eq!(made.json["lab"]["slug"], "quest");
        assert_eq!(made.json["fasting"], true);
        assert_eq!(made.json["status"], "active");
    }
    // Cursor pages of 3 over 7 tests: 3, 3, 1, then no cursor; every test once.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            None => "/v3/lab_test?lab_test_limit=3".to_owned(),
            Some(c) => format!("/v3/lab_test?lab_test_limit=3&next_cursor={c}"),
        };
        let page = app.get(&path).await.json;
        pages += 1;
        for t in page["data"].as_array().unwrap() {
            seen.push(t["id"].as_str().unwrap().to_owned());
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen.len(), 7);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 7);
    // Patch: status and name; an inactive test says so.
    let id = all[0]["id"].as_str().unwrap();
    let p = app
        .patch(
            &format!("/v3/lab_tests/{id}"),
            json!({"status": "inactive", "name": "Renamed"}),
        )
        .await;
    assert_eq!(p.json["is_active"], false, "{}", p.json);
    assert_eq!(p.json["name"], "Renamed");
    assert_eq!(
        app.get(&format!("/v3/lab_tests/{id}")).await.json["status"],
        "inactive"
    );
    assert_eq!(
        app.patch(&format!("/v3/lab_tests/{id}"), json!({"price": 1}))
            .await
            .status,
        422
    );
}

#[tokio::test]
async fn lab_test_and_order_set_markers_page_like_the_interface() {
    let app = TestApp::new().await;
    let key = app.key.clone();
    let walk_in = super::sandbox_test(&app, &key, "walk_in_test").await;
    // CMP + CBC with differential: two panels.
    let page = app
        .get(&format!("/v3/lab_tests/{walk_in}/markers?size=1&page=2"))
        .await
        .json;
    assert_eq!(page["total"], 2);
    assert_eq!(page["pages"], 2);
    assert_eq!(page["page"], 2);
    assert_eq!(
        page["markers"][0]["name"],
        "Complete Blood Count with Differential"
    );
    let phleb = super::sandbox_test(&app, &key, "at_home_phlebotomy").await;
    let set = app
        .post("/v3/lab_tests/list_order_set_markers?size=2", json!({"lab_test_ids": [phleb], "add_on": {"marker_ids": [2001], "provider_ids": ["2-45484"]}}))
        .await
        .json;
    // Lipid panel, vitamin D, TSH, cholesterol (add-on), and the add-on by order code; each once.
    assert_eq!(set["total"], 5, "{set}");
    assert_eq!(set["pages"], 3);
    assert_eq!(set["markers"].as_array().unwrap().len(), 2);
    let dup = app
        .post(
            "/v3/lab_tests/list_order_set_markers",
            json!({"lab_test_ids": [phleb, phleb]}),
        )
        .await
        .json;
    assert_eq!(dup["total"], 3);
    let empty = app
        .post(
            "/v3/lab_tests/list_order_set_markers",
            json!({"lab_test_ids": null}),
        )
        .await
        .json;
    assert_eq!(empty["total"], 0);
    assert_eq!(empty["pages"], 0);
    let bad = app
        .post(
            "/v3/lab_tests/list_order_set_markers",
            json!({"add_on": {"provider_ids": ["nope"]}}),
        )
        .await;
    assert_eq!(bad.status, 422, "{}", bad.json);
}
