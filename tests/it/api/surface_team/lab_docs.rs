//! The per-order lab reads of issue 42 on the real server: result metadata and the results
//! report (a real PDF read back by pypdf, its table holding every result), collection
//! instructions of an order and of a lab test (PDFs), the PSCs near an order's patient, a
//! marker by its lab code, and the order transaction with its results. Each answers 404 for
//! the other team's ids and parses with the reference's models.

use serde_json::{Value, json};

use super::{Live, case, check_against_reference, pdf_text};

fn order_body(user: &str, test: &str) -> Value {
    json!({
        "user_id": user,
        "patient_details": {"first_name": "Zoë", "last_name": "O'Brien", "dob": "1985-12-10",
            "gender": "female", "phone_number": "+16025550123", "email": "zoe@example.com"},
        "patient_address": {"first_line": "100 N 1st Ave", "city": "Phoenix", "state": "AZ",
            "zip": "85004", "country": "US"},
        "order_set": {"lab_test_ids": [test]},
        "physician": {"first_name": "Gregory", "last_name": "House", "npi": "1234567893"}
    })
}

/// The team's sandbox lab test of `method`.
async fn sandbox_test(live: &Live, key: &str, method: &str) -> Value {
    let tests = live
        .call("GET", "/v3/lab_tests", Some(key), None)
        .await
        .json;
    tests
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["method"] == method)
        .unwrap_or_else(|| panic!("no {method} test in {tests}"))
        .clone()
}

async fn order(live: &Live, key: &str, user: &str, test: &str) -> Value {
    let a = live
        .call("POST", "/v3/order", Some(key), Some(order_body(user, test)))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    a.json["order"].clone()
}

fn is_pdf(a: &super::Reply) {
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.headers["content-type"], "application/pdf");
    assert!(a.bytes.starts_with(b"%PDF-"), "not a PDF");
}

#[tokio::test]
async fn results_instructions_centres_markers_and_transactions_of_an_order() {
    let live = Live::start("warn");
    let (key, other) = (live.key.clone(), live.other.clone());
    let user = live.user(&key, "patient").await;
    let walk_in = sandbox_test(&live, &key, "walk_in_test").await;
    let test_id = walk_in["id"].as_str().unwrap().to_owned();
    let o = order(&live, &key, &user, &test_id).await;
    let id = o["id"].as_str().unwrap().to_owned();
    let transaction = o["order_transaction"]["id"].as_str().unwrap().to_owned();
    let theirs_user = live.user(&other, "theirs").await;
    let their_test = sandbox_test(&live, &other, "walk_in_test").await;
    let theirs = order(
        &live,
        &other,
        &theirs_user,
        their_test["id"].as_str().unwrap(),
    )
    .await;
    let their_id = theirs["id"].as_str().unwrap().to_owned();
    let their_transaction = theirs["order_transaction"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut cases = Vec::new();

    // Before results: the metadata, report and transaction results are refused, naming why.
    for path in [
        format!("/v3/order/{id}/result/metadata"),
        format!("/v3/order/{id}/result/pdf"),
        format!("/v3/order_transaction/{transaction}/result"),
        format!("/v3/order_transaction/{transaction}/result/pdf"),
    ] {
        let a = live.get(&path).await;
        assert_eq!(a.status, 400, "{path}: {}", a.json);
        assert!(
            a.json["detail"]
                .as_str()
                .unwrap()
                .contains("no results yet"),
            "{}",
            a.json
        );
    }
    let a = live
        .get(&format!("/v3/order_transaction/{transaction}"))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["status"], "active");
    assert_eq!(a.json["orders"][0]["id"], id.as_str());
    assert_eq!(a.json["orders"][0]["last_status"], "ordered");

    // Completed: metadata and the report.
    let walked = live
        .post(
            &format!("/v3/order/{id}/test?final_status=completed"),
            json!({}),
        )
        .await;
    assert_eq!(walked.status, 200, "{}", walked.json);
    let results = live.get(&format!("/v3/order/{id}/result")).await.json;
    let metadata = live.get(&format!("/v3/order/{id}/result/metadata")).await;
    assert_eq!(metadata.status, 200, "{}", metadata.json);
    assert_eq!(metadata.json, results["metadata"]);
    assert_eq!(metadata.json["patient"], "Zoë O'Brien");
    assert_eq!(metadata.json["specimen_number"], o["sample_id"]);
    cases.push(case(
        "metadata",
        "LabResultsMetadata",
        Some("LabResultsMetadata"),
        &metadata.json,
    ));

    let report = live.get(&format!("/v3/order/{id}/result/pdf")).await;
    is_pdf(&report);
    let text = pdf_text(&report.bytes);
    assert!(text.contains("Laboratory Results"), "{text}");
    assert!(text.contains("Zoë O'Brien"), "{text}");
    assert!(text.contains(o["sample_id"].as_str().unwrap()), "{text}");
    assert!(text.contains("Gregory House"), "{text}");
    assert!(text.contains("Reference range"), "{text}");
    let rows = results["results"].as_array().unwrap();
    assert!(!rows.is_empty());
    for r in rows {
        let name = r["name"].as_str().unwrap();
        let shown: String = name.chars().take(39).collect();
        assert!(text.contains(&shown), "{name} missing from\n{text}");
        assert!(text.contains(r["result"].as_str().unwrap()), "{r}");
    }

    // The transaction now completed, with the order's results.
    let t = live
        .get(&format!("/v3/order_transaction/{transaction}"))
        .await;
    assert_eq!(t.json["status"], "completed");
    assert_eq!(t.json["orders"][0]["last_status"], "completed");
    cases.push(case(
        "transaction",
        "GetOrderTransactionResponse",
        None, // the pinned SDK predates this model: the published schema alone checks it
        &t.json,
    ));
    let tr = live
        .get(&format!("/v3/order_transaction/{transaction}/result"))
        .await;
    assert_eq!(tr.status, 200, "{}", tr.json);
    assert_eq!(tr.json["results"], results["results"]);
    assert_eq!(tr.json["order_transaction"]["id"], transaction.as_str());
    assert_eq!(tr.json["order_transaction"]["status"], "completed");
    cases.push(case(
        "transaction result",
        "LabResultsRaw",
        Some("LabResultsRaw"),
        &tr.json,
    ));
    let tpdf = live
        .get(&format!("/v3/order_transaction/{transaction}/result/pdf"))
        .await;
    is_pdf(&tpdf);
    assert!(pdf_text(&tpdf.bytes).contains(o["sample_id"].as_str().unwrap()));

    // Collection instructions: the order's and the lab test's.
    let instructions = live
        .get(&format!("/v3/order/{id}/collection_instruction_pdf"))
        .await;
    is_pdf(&instructions);
    let text = pdf_text(&instructions.bytes);
    assert!(text.contains("Collection Instructions"), "{text}");
    assert!(text.contains("Zoë O'Brien"), "{text}");
    assert!(text.contains("patient service centre"), "{text}");
    let lab_test = live
        .get(&format!(
            "/v3/lab_test/{test_id}/collection_instruction_pdf"
        ))
        .await;
    is_pdf(&lab_test);
    let text = pdf_text(&lab_test.bytes);
    assert!(text.contains(walk_in["name"].as_str().unwrap()), "{text}");
    let first_marker = walk_in["markers"][0]["name"].as_str().unwrap();
    assert!(
        text.contains(first_marker),
        "{first_marker} missing from\n{text}"
    );

    // Centres near the order's patient: the order's lab, nearest first, filters checked.
    let a = live
        .get(&format!("/v3/order/{id}/psc/info?radius=50"))
        .await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(a.json["lab_id"], o["lab_id"]);
    let centres = a.json["patient_service_centers"].as_array().unwrap();
    assert!(!centres.is_empty(), "{}", a.json);
    let distances: Vec<i64> = centres
        .iter()
        .map(|c| c["distance"].as_i64().unwrap())
        .collect();
    assert!(distances.windows(2).all(|w| w[0] <= w[1]) && distances[distances.len() - 1] <= 50);
    let zip = live
        .get(&format!(
            "/v3/order/psc/info?zip_code=85004&radius=50&lab_id={}",
            o["lab_id"]
        ))
        .await;
    assert_eq!(a.json, zip.json, "the order's ZIP, the order's lab");
    cases.push(case("psc info", "PSCInfo", Some("PscInfo"), &a.json));
    let stat = live
        .get(&format!(
            "/v3/order/{id}/psc/info?radius=50&capabilities=stat"
        ))
        .await;
    assert_eq!(stat.status, 200, "{}", stat.json);
    for c in stat.json["patient_service_centers"].as_array().unwrap() {
        assert!(
            c["capabilities"]
                .as_array()
                .unwrap()
                .contains(&json!("stat")),
            "{c}"
        );
    }
    let bad = live
        .get(&format!("/v3/order/{id}/psc/info?capabilities=teleport"))
        .await;
    assert_eq!(bad.status, 422, "{}", bad.json);
    assert_eq!(
        bad.json["detail"][0]["loc"],
        json!(["query", "capabilities", 0])
    );
    let bad = live.get(&format!("/v3/order/{id}/psc/info?radius=7")).await;
    assert_eq!(bad.status, 422, "{}", bad.json);

    // A marker by its lab's order code.
    let listed = live.get("/v3/lab_tests/markers?lab_id=1&size=1").await.json;
    let marker = &listed["markers"][0];
    let code = marker["provider_id"].as_str().unwrap();
    let a = live.get(&format!("/v3/lab_tests/1/markers/{code}")).await;
    assert_eq!(a.status, 200, "{}", a.json);
    assert_eq!(&a.json, marker);
    cases.push(case(
        "marker",
        "ClientFacingMarker",
        Some("ClientFacingMarker"),
        &a.json,
    ));
    assert_eq!(
        live.get("/v3/lab_tests/1/markers/no-such-code")
            .await
            .status,
        404
    );
    assert_eq!(
        live.get(&format!("/v3/lab_tests/999/markers/{code}"))
            .await
            .status,
        404
    );
    let a = live.get(&format!("/v3/lab_tests/one/markers/{code}")).await;
    assert_eq!(a.status, 422, "{}", a.json);
    assert_eq!(a.json["detail"][0]["loc"], json!(["path", "lab_id"]));

    // Tenancy: the other team's order, transaction and lab test are unknown here.
    for path in [
        format!("/v3/order/{their_id}/result/metadata"),
        format!("/v3/order/{their_id}/result/pdf"),
        format!("/v3/order/{their_id}/collection_instruction_pdf"),
        format!("/v3/order/{their_id}/psc/info"),
        format!("/v3/order_transaction/{their_transaction}"),
        format!("/v3/order_transaction/{their_transaction}/result"),
        format!("/v3/order_transaction/{their_transaction}/result/pdf"),
        format!(
            "/v3/lab_test/{}/collection_instruction_pdf",
            their_test["id"].as_str().unwrap()
        ),
    ] {
        let a = live.get(&path).await;
        assert_eq!(a.status, 404, "{path}: {}", a.json);
        assert!(
            a.json["detail"].as_str().unwrap().ends_with("not found"),
            "{path}"
        );
        let b = live
            .get(&path.replace(&their_id, &uuid::Uuid::new_v4().to_string()))
            .await;
        assert_eq!(b.status, 404, "{path}");
    }

    check_against_reference(&cases);
}
