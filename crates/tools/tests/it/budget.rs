use gyre_protocol::ToolResultContent;
use gyre_tools::{OutputLimits, enforce_budget, estimate_tokens};

fn text(t: &str) -> ToolResultContent {
    ToolResultContent::Text { text: t.into() }
}

fn image() -> ToolResultContent {
    ToolResultContent::Image {
        media_type: "image/png".into(),
        data: "aGVsbG8=".into(),
    }
}

fn numbered(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

#[tokio::test]
async fn results_within_the_budget_pass_unchanged() {
    let limits = OutputLimits {
        max_result_tokens: 100,
        spill_dir: None,
    };
    let content = vec![text(&"a".repeat(400)), image()];
    let out = enforce_budget(content.clone(), &limits, "s", "c").await;
    assert_eq!(out, content);
    assert_eq!(estimate_tokens(&"a".repeat(400)), 100);
}

#[tokio::test]
async fn long_results_are_cut_and_spilled_whole() {
    let spill = tempfile::tempdir().unwrap();
    let limits = OutputLimits {
        max_result_tokens: 1_000,
        spill_dir: Some(spill.path().to_path_buf()),
    };
    let first = numbered(5_000);
    let second = "the end\n";
    let content = vec![image(), text(&first), image(), text(second)];
    let out = enforce_budget(content, &limits, "sess/1", "call_7").await;
    assert_eq!(out.len(), 3, "the texts become one, the images stay");
    assert_eq!(out[0], image());
    assert_eq!(out[2], image());
    let ToolResultContent::Text { text: cut } = &out[1] else {
        panic!("expected text, got {:?}", out[1]);
    };
    assert!(cut.len() <= 4_000, "{}", cut.len());
    assert!(cut.starts_with("line 1\nline 2\n"), "{cut}");
    assert!(cut.ends_with("line 5000\n\nthe end\n"), "{cut}");
    let path = spill.path().join("sess_1").join("call_7.txt");
    let marker = cut.lines().find(|l| l.starts_with("[... ")).unwrap();
    assert!(
        marker.ends_with(&format!("cut; full output in {} ...]", path.display())),
        "{marker}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        format!("{first}\n{second}")
    );
}

#[tokio::test]
async fn without_a_spill_directory_the_marker_names_no_file() {
    let limits = OutputLimits {
        max_result_tokens: 50,
        spill_dir: None,
    };
    let out = enforce_budget(vec![text(&numbered(1_000))], &limits, "s", "c").await;
    let [ToolResultContent::Text { text: cut }] = out.as_slice() else {
        panic!("{out:?}");
    };
    assert!(cut.len() <= 200, "{}", cut.len());
    let marker = cut.lines().find(|l| l.starts_with("[... ")).unwrap();
    assert!(marker.ends_with(" bytes) cut ...]"), "{marker}");
}

#[tokio::test]
async fn an_unwritable_spill_directory_is_reported_in_the_marker() {
    let dir = tempfile::tempdir().unwrap();
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let limits = OutputLimits {
        max_result_tokens: 500,
        spill_dir: Some(blocker),
    };
    let out = enforce_budget(vec![text(&numbered(2_000))], &limits, "s", "c").await;
    let [ToolResultContent::Text { text: cut }] = out.as_slice() else {
        panic!("{out:?}");
    };
    assert!(
        cut.contains("; the full output could not be saved: "),
        "{cut}"
    );
    assert!(cut.len() <= 2_000);
}
