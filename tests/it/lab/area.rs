//! Area coverage on the real ZIP table: distances checked against hand-computed haversine
//! values for three real ZIP codes, the radius rule, phlebotomy coverage (85004 and 54650
//! served), PSC lists and `wearhouse lab import-pscs`.
//!
//! Hand computation (haversine, R = 3958.7613 mi, centroids of the committed table):
//! - 85004 Phoenix (33.4506, -112.0694) → 85281 Tempe (33.4357, -111.9278): 8.228 mi
//! - 85004 → 85251 Scottsdale (33.4941, -111.9229): 8.962 mi
//! - 85004 → 85301 Glendale (33.5382, -112.1859): 9.038 mi
//! - 85004 → 86001 Flagstaff (35.4749, -111.7000): 141.44 mi (outside every radius)

use serde_json::json;
use wearhouse::lab::area::zips;
use wearhouse::store::metadata::lab::pscs::{self, PscRecord};

use crate::support::TestApp;

fn centre(site: &str, zip: &str) -> PscRecord {
    let z = zips::lookup(zip).unwrap();
    PscRecord {
        lab_slug: "labcorp".into(),
        site_code: site.into(),
        name: format!("Labcorp {zip}"),
        first_line: "1 Test Way".into(),
        city: z.city.clone(),
        state: z.state.clone(),
        zip_code: zip.into(),
        lat: z.point.lat,
        lng: z.point.lng,
        phone_number: None,
        capabilities: if site == "T" {
            vec!["stat".into()]
        } else {
            vec![]
        },
    }
}

#[tokio::test]
async fn distances_match_hand_computed_haversine() {
    let from = zips::lookup("85004").unwrap().point;
    for (zip, miles) in [
        ("85281", 8.228),
        ("85251", 8.962),
        ("85301", 9.038),
        ("86001", 141.44),
    ] {
        let d = zips::haversine_miles(from, zips::lookup(zip).unwrap().point);
        assert!((d - miles).abs() < 0.005, "{zip}: {d} vs {miles}");
    }
    // Through the API, with imported centres at those ZIP codes.
    let app = TestApp::new().await;
    let mut tx = app.state.meta.begin().await.unwrap();
    pscs::replace(
        &mut tx,
        &[
            centre("T", "85281"),
            centre("S", "85251"),
            centre("G", "85301"),
            centre("F", "86001"),
        ],
    )
    .await
    .unwrap();
    tx.commit().await.unwrap();
    app.state.lab.load_pscs(&app.state.meta).await.unwrap();
    let info = app
        .get("/v3/order/psc/info?zip_code=85004&lab_id=2&radius=10")
        .await
        .json;
    let got: Vec<(&str, i64)> = info["patient_service_centers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["site_code"].as_str().unwrap(),
                c["distance"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, [("T", 8), ("S", 9), ("G", 9)], "{info}");
    for radius in ["10", "20", "25", "50", "100"] {
        let a = app
            .get(&format!(
                "/v3/order/area/info?zip_code=85004&labs=labcorp&radius={radius}"
            ))
            .await
            .json;
        let lab = &a["central_labs"]["labcorp"]["patient_service_centers"];
        assert_eq!(lab["within_radius"], 3, "{radius}: {a}");
        assert_eq!(lab["radius"], radius, "radius is echoed as a string");
        assert_eq!(lab["capabilities"], json!(["stat"]));
        assert_eq!(a["central_labs"].as_object().unwrap().len(), 1);
    }
    // Tucson (85701) is 100.90 mi from Tempe, the nearest: just outside radius 100.
    let tucson = app
        .get("/v3/order/area/info?zip_code=85701&labs=labcorp&radius=100")
        .await
        .json;
    assert_eq!(
        tucson["central_labs"]["labcorp"]["patient_service_centers"]["within_radius"],
        0
    );
    // Labs without imports keep their sandbox network; the default radius is 25.
    let a = app.get("/v3/order/area/info?zip_code=85004").await.json;
    assert_eq!(a["central_labs"].as_object().unwrap().len(), 4);
    assert_eq!(
        a["central_labs"]["quest"]["patient_service_centers"]["radius"],
        "25"
    );
    assert!(
        a["central_labs"]["quest"]["patient_service_centers"]["within_radius"]
            .as_i64()
            .unwrap()
            > 0
    );
    assert_eq!(a["central_labs"]["quest"]["lab_id"], 1);
}

#[tokio::test]
async fn phlebotomy_coverage() {
    let app = TestApp::new().await;
    for (zip, served) in [
        ("85004", true),
        ("54650", true),
        ("85003", true),
        ("10001", false),
        ("86001", false),
    ] {
        let a = app
            .get(&format!("/v3/order/area/info?zip_code={zip}"))
            .await
            .json;
        assert_eq!(a["zip_code"], zip);
        assert_eq!(a["phlebotomy"]["is_served"], served, "{zip}: {a}");
        assert_eq!(
            a["phlebotomy"]["providers"].as_array().unwrap().len(),
            usize::from(served)
        );
        if served {
            // The seed's `tier` and the reference's `service_types`, both.
            for name in ["tier", "service_types"] {
                assert_eq!(
                    a["phlebotomy"]["providers"][0][name],
                    json!(["appointment-ready"]),
                    "{name}"
                );
            }
        }
    }
    let a = app
        .post("/v3/order/phlebotomy/appointment/availability", json!({"first_line": "1 Broadway", "city": "New York", "state": "NY", "zip_code": "10001"}))
        .await;
    assert_eq!(a.status, 400, "{}", a.json);
    assert!(a.json["detail"].as_str().unwrap().contains("not served"));
}

#[tokio::test]
async fn psc_lists_are_nearest_first_and_capped() {
    let app = TestApp::new().await;
    let info = app
        .get("/v3/order/psc/info?zip_code=10001&lab_id=1&radius=100")
        .await
        .json;
    let centres = info["patient_service_centers"].as_array().unwrap();
    assert_eq!(centres.len(), 30, "at most 30");
    let d: Vec<i64> = centres
        .iter()
        .map(|c| c["distance"].as_i64().unwrap())
        .collect();
    assert!(d.windows(2).all(|w| w[0] <= w[1]), "{d:?}");
    assert!(
        centres
            .iter()
            .all(|c| c["metadata"]["zip_code"].as_str().unwrap().len() == 5)
    );
    assert!(
        centres
            .iter()
            .all(|c| c["supported_bill_types"] == json!(["client_bill"]))
    );
    let area = app
        .get("/v3/order/area/info?zip_code=10001&labs=quest&radius=100")
        .await
        .json;
    let quest = &area["central_labs"]["quest"];
    assert!(
        quest["patient_service_centers"]["within_radius"]
            .as_i64()
            .unwrap()
            > 30
    );
    assert_eq!(
        quest["patient_service_centers"]["appointment_with_vital"],
        true
    );
    assert_eq!(quest["supported_bill_types"], json!(["client_bill"]));
    // Sonora Quest has centres in Arizona only: none within 100 miles of Manhattan.
    let none = app
        .get("/v3/order/area/info?zip_code=10001&labs=sonora_quest&radius=100")
        .await
        .json;
    let centres = &none["central_labs"]["sonora_quest"]["patient_service_centers"];
    assert_eq!(centres["within_radius"], 0, "{none}");
    assert_eq!(centres["appointment_with_vital"], false);
}

#[tokio::test]
async fn import_pscs_cli_replaces_a_labs_network() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("pscs.csv");
    std::fs::write(
        &csv,
        "lab_slug,site_code,name,first_line,city,state,zip_code,capabilities\n\
         bioreference,BR1,\"BioReference, Tempe\",1 Mill Ave,Tempe,AZ,85281,stat\n\
         bioreference,BR2,BioReference Glendale,2 Glen Ave,Glendale,AZ,85301,\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wearhouse"))
        .args(["lab", "import-pscs"])
        .arg(&csv)
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "bioreference\t2 centres"
    );
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "lab_slug,site_code,name,first_line,city,state,zip_code\nnolab,1,n,f,c,AZ,85004\n",
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wearhouse"))
        .args(["lab", "import-pscs"])
        .arg(&bad)
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("line 2: unknown lab"),
        "{out:?}"
    );
    // A server on that data dir serves the imported centres.
    let key = crate::support::server::create_team(dir.path(), "pscs", &[]);
    let server = crate::support::server::Server::start(dir.path(), &[]);
    let http = crate::support::server::http_client(10);
    let info: serde_json::Value = http
        .get(server.url("/v3/order/psc/info?zip_code=85004&lab_id=3&radius=10"))
        .header("x-service-api-key", &key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let sites: Vec<&str> = info["patient_service_centers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["site_code"].as_str().unwrap())
        .collect();
    assert_eq!(sites, ["BR1", "BR2"], "{info}");
    assert_eq!(
        info["patient_service_centers"][0]["metadata"]["name"],
        "BioReference, Tempe"
    );
    server.stop();
}
