//! Unit tests of the lease store: what may be leased, what a lease covers, how it ends.

use std::time::{Duration, SystemTime};

use super::*;

fn scope(vmid: &str, effects: &[Effect]) -> Scope {
    Scope {
        holder: "stdio".into(),
        cluster: String::new(),
        target: Target::Guest(vmid.into()),
        tool: "pve_qemu_update_config",
        routine: false,
        effects: effects.iter().copied().collect(),
        rules: Vec::new(),
    }
}

fn granted(store: &Leases, scope: Scope) -> Lease {
    let offer = store.offer(scope).expect("offered");
    store.grant(&offer, 30, "person").expect("granted").0
}

#[test]
fn only_changes_and_cross_guest_effects_are_leasable() {
    let store = Leases::new(60);
    assert!(store.offer(scope("101", &[Effect::Change])).is_some());
    assert!(
        store
            .offer(scope("101", &[Effect::Change, Effect::CrossGuest]))
            .is_some()
    );
    for never in [
        Effect::Destroy,
        Effect::Exec,
        Effect::Egress,
        Effect::Access,
        Effect::SensitiveRead,
        Effect::Unplaced,
    ] {
        assert!(
            store
                .offer(scope("101", &[Effect::Change, never]))
                .is_none(),
            "{never} must not be leasable"
        );
    }
    assert!(
        store.offer(scope("101", &[])).is_none(),
        "a read needs no lease"
    );
}

#[test]
fn the_lengths_offered_stop_at_the_longest() {
    let minutes = |longest| {
        Leases::new(longest)
            .offer(scope("101", &[Effect::Change]))
            .map(|o| o.minutes)
    };
    assert_eq!(minutes(60), Some(vec![15, 30, 60]));
    assert_eq!(minutes(20), Some(vec![15, 20]));
    assert_eq!(minutes(240), Some(vec![15, 30, 60, 240]));
    assert_eq!(minutes(480), Some(vec![15, 30, 60, 240]));
    assert_eq!(minutes(10), Some(vec![10]));
    assert_eq!(minutes(0), None, "0 turns leases off");
}

#[test]
fn a_length_not_offered_grants_nothing() {
    let store = Leases::new(60);
    let offer = store
        .offer(scope("101", &[Effect::Change]))
        .expect("offered");
    assert!(store.grant(&offer, 45, "person").is_none());
    assert!(store.grant(&offer, 240, "person").is_none());
    assert!(store.list(None).is_empty());
}

#[test]
fn a_lease_covers_only_its_holder_cluster_target_effects_and_rules() {
    let store = Leases::new(60);
    let lease = granted(&store, scope("101", &[Effect::Change, Effect::CrossGuest]));
    let same = scope("101", &[Effect::Change]);
    let found = store.find(&same, None);
    assert_eq!(
        found.lease.map(|l| (l.id, l.uses)),
        Some((lease.id.clone(), 1))
    );

    let misses = [
        scope("102", &[Effect::Change]),
        scope("101", &[Effect::Change, Effect::Destroy]),
        Scope {
            holder: "oauth:bob".into(),
            ..same.clone()
        },
        Scope {
            cluster: "lab2".into(),
            ..same.clone()
        },
        Scope {
            rules: vec!["force=1".into()],
            ..same.clone()
        },
        // Another tool's change to the same guest (a migration, a disk resize).
        Scope {
            tool: "pve_qemu_migrate",
            ..same.clone()
        },
        Scope {
            target: Target::Call {
                tool: "pve_create_pool",
                object: "poolid=101".into(),
            },
            ..same.clone()
        },
    ];
    for miss in misses {
        assert!(store.find(&miss, None).lease.is_none(), "{miss:?}");
    }
    // A routine change of another tool to the same guest is covered (it asked only because
    // of the guest's facts, which the person saw).
    let start = Scope {
        tool: "pve_start_qemu_vm",
        routine: true,
        ..same.clone()
    };
    assert!(store.find(&start, None).lease.is_some());
}

#[test]
fn expired_and_revoked_leases_end_and_are_reported_once() {
    let store = Leases::new(60);
    let lease = granted(&store, scope("101", &[Effect::Change]));
    // Past its end.
    store.lock()[0].expires = SystemTime::now() - Duration::from_secs(1);
    let found = store.find(&scope("101", &[Effect::Change]), None);
    assert!(found.lease.is_none());
    assert_eq!(found.ended.len(), 1);
    assert_eq!(found.ended[0].1, Ending::Expired);
    assert_eq!(found.ended[0].0.id, lease.id);
    assert!(
        store
            .find(&scope("101", &[Effect::Change]), None)
            .ended
            .is_empty()
    );

    let dir = tempfile::tempdir().expect("temp dir");
    let file = revocation_file(&dir.path().join("frozen"));
    let by_id = granted(&store, scope("101", &[Effect::Change]));
    let kept = granted(&store, scope("102", &[Effect::Change]));
    write_revocation(&file, &format!("lease {}", by_id.id)).expect("written");
    let found = store.find(&scope("101", &[Effect::Change]), Some(&file));
    assert!(found.lease.is_none());
    assert_eq!(found.ended.len(), 1);
    assert_eq!(found.ended[0].1, Ending::Revoked);
    assert_eq!(
        store.list(None).iter().map(|l| &l.id).collect::<Vec<_>>(),
        [&kept.id]
    );

    write_revocation(&file, &revoke_all_line()).expect("written");
    let found = store.find(&scope("102", &[Effect::Change]), Some(&file));
    assert!(found.lease.is_none());
    assert!(store.list(None).is_empty());
    // A lease granted after the revocation's second lives on.
    store.lock().clear();
    let later = granted(&store, scope("102", &[Effect::Change]));
    store.lock()[0].granted = SystemTime::now() + Duration::from_secs(5);
    assert_eq!(
        store
            .find(&scope("102", &[Effect::Change]), Some(&file))
            .lease
            .map(|l| l.id),
        Some(later.id)
    );
}

#[test]
fn an_unreadable_revocation_file_ends_every_lease() {
    let store = Leases::new(60);
    granted(&store, scope("101", &[Effect::Change]));
    let dir = tempfile::tempdir().expect("temp dir");
    // A folder where the file should be cannot be read as one.
    let file = dir.path().join("leases-revoked");
    std::fs::create_dir(&file).expect("folder");
    let found = store.find(&scope("101", &[Effect::Change]), Some(&file));
    assert!(found.lease.is_none());
    assert_eq!(found.ended.len(), 1);
}

#[test]
fn the_store_is_bounded_and_evicts_the_nearest_end() {
    let store = Leases::new(60);
    let first = granted(&store, scope("100", &[Effect::Change]));
    store.lock()[0].expires = SystemTime::now() + Duration::from_secs(1);
    for n in 1..CAPACITY {
        granted(&store, scope(&format!("{}", 100 + n), &[Effect::Change]));
    }
    let offer = store
        .offer(scope("999", &[Effect::Change]))
        .expect("offered");
    let (_, evicted) = store.grant(&offer, 15, "person").expect("granted");
    assert_eq!(evicted.map(|l| l.id), Some(first.id));
    assert_eq!(store.list(None).len(), CAPACITY);
}

#[test]
fn end_all_empties_the_store() {
    let store = Leases::new(60);
    granted(&store, scope("101", &[Effect::Change]));
    granted(&store, scope("102", &[Effect::Change]));
    assert_eq!(store.end_all().len(), 2);
    assert!(store.list(None).is_empty());
    assert!(
        store
            .find(&scope("101", &[Effect::Change]), None)
            .lease
            .is_none()
    );
}
