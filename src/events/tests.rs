use serde_json::json;

use super::*;

fn updated(uri: &str) -> ServerEvent {
    ServerEvent::ResourceUpdated { uri: uri.into() }
}

#[test]
fn an_update_is_covered_for_the_uri_or_a_sub_resource_of_it_only() {
    let interest = Interest::new().resource("file:///project");
    assert!(interest.covers(&updated("file:///project")));
    assert!(interest.covers(&updated("file:///project/src/main.rs")));
    assert!(interest.covers(&updated("file:///project?rev=2")));
    assert!(interest.covers(&updated("file:///project#top")));
    // A longer name is another resource, not a sub-resource.
    assert!(!interest.covers(&updated("file:///project2")));
    assert!(!interest.covers(&updated("file:///proj")));
    assert!(!interest.covers(&ServerEvent::ToolsListChanged));
    let lists = Interest::every_list();
    assert!(lists.covers(&ServerEvent::ToolsListChanged));
    assert!(lists.covers(&ServerEvent::PromptsListChanged));
    assert!(lists.covers(&ServerEvent::ResourcesListChanged));
    assert!(!lists.covers(&updated("file:///project")));
}

#[test]
fn an_acknowledged_filter_is_read_and_compared_with_the_request() {
    let asked = Interest::new()
        .tools_list()
        .resource("a://1")
        .resource("a://2");
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": ["a://2"]});
    let acked = Interest::from_filter(filter.as_object().unwrap()).unwrap();
    assert_eq!(acked, Interest::new().tools_list().resource("a://2"));
    assert!(acked.is_subset_of(&asked));
    // More than was asked is not a subset.
    let filter = json!({"promptsListChanged": true});
    let acked = Interest::from_filter(filter.as_object().unwrap()).unwrap();
    assert!(!acked.is_subset_of(&asked));
    let filter = json!({"resourceSubscriptions": ["a://3"]});
    let acked = Interest::from_filter(filter.as_object().unwrap()).unwrap();
    assert!(!acked.is_subset_of(&asked));
    // Wrong types are rules broken, named without the server's text.
    for bad in [
        json!({"toolsListChanged": "yes"}),
        json!({"resourceSubscriptions": "a://1"}),
        json!({"resourceSubscriptions": [1]}),
    ] {
        let rule = Interest::from_filter(bad.as_object().unwrap()).unwrap_err();
        assert!(!rule.contains("a://1") && !rule.contains("yes"), "{rule}");
    }
}

#[test]
fn the_filter_asks_only_for_what_the_interest_names() {
    assert_eq!(Interest::new().to_filter(), json!({}));
    assert_eq!(
        Interest::every_list().resource("a://1").to_filter(),
        json!({"toolsListChanged": true, "promptsListChanged": true,
               "resourcesListChanged": true, "resourceSubscriptions": ["a://1"]})
    );
}

#[test]
fn the_hosts_uris_are_checked_and_repeats_dropped() {
    let interest = Interest::new()
        .resource("a://1")
        .resource("a://2")
        .resource("a://1")
        .checked(4096)
        .unwrap();
    assert_eq!(interest.resources, ["a://1", "a://2"]);
    let error = Interest::new()
        .resource("a://ok")
        .resource("no scheme\u{7}")
        .checked(4096)
        .unwrap_err();
    assert_eq!(error.kind(), crate::ErrorKind::ProtocolError);
    assert!(error.message().contains("resource 2"), "{error}");
    let error = Interest::new().resource("a://long").checked(4).unwrap_err();
    assert!(error.message().contains("maxUriBytes"), "{error}");
}

#[test]
fn a_change_notification_becomes_an_event_and_a_bad_uri_a_rule() {
    let event = |method: &str, params: Value| {
        ServerEvent::from_notification(method, params.as_object(), 4096)
    };
    assert_eq!(
        event(TOOLS_LIST_CHANGED, json!({})),
        Some(Ok(ServerEvent::ToolsListChanged))
    );
    assert_eq!(
        event(RESOURCES_UPDATED, json!({"uri": "file:///a"})),
        Some(Ok(updated("file:///a")))
    );
    let rule = event(RESOURCES_UPDATED, json!({"uri": "file:///a\u{202e}"}))
        .unwrap()
        .unwrap_err();
    assert!(!rule.contains("file:"), "{rule}");
    assert!(event(RESOURCES_UPDATED, json!({})).unwrap().is_err());
    assert_eq!(event("notifications/message", json!({})), None);
    assert!(ServerEvent::is_change(PROMPTS_LIST_CHANGED));
    assert!(!ServerEvent::is_change("notifications/progress"));
}

#[test]
fn the_queue_coalesces_equal_events_and_ends_lagged_past_its_capacity() {
    let mut queue = EventQueue::new(2);
    assert_eq!(queue.offer(ServerEvent::ToolsListChanged), Offered::Queued);
    assert_eq!(
        queue.offer(ServerEvent::ToolsListChanged),
        Offered::Coalesced
    );
    assert_eq!(queue.offer(updated("a://1")), Offered::Queued);
    assert_eq!(queue.offer(updated("a://2")), Offered::Lagged);
    assert_eq!(queue.offer(updated("a://3")), Offered::Ended);
    // What was queued is still delivered, then the end.
    assert_eq!(queue.take().unwrap(), Some(ServerEvent::ToolsListChanged));
    assert_eq!(queue.take().unwrap(), Some(updated("a://1")));
    assert!(matches!(queue.take(), Err(SubscriptionEnd::Lagged)));
    // The first end stands.
    queue.finish(SubscriptionEnd::Graceful);
    assert!(matches!(queue.end(), Some(SubscriptionEnd::Lagged)));
}

#[test]
fn the_rate_window_admits_so_many_per_second_and_counts_the_rest() {
    let mut window = RateWindow::new(3);
    let start = Instant::now();
    assert!((0..3).all(|_| window.admit(start)));
    assert!(!window.admit(start + Duration::from_millis(999)));
    assert_eq!(window.dropped, 1);
    assert!(window.admit(start + Duration::from_secs(1)));
    assert_eq!(window.dropped, 0);
}
