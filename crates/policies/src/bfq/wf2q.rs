//! B-WF2Q+ (the kernel's `block/bfq-wf2q.c`), flat: one service tree per I/O priority
//! class, no cgroup hierarchy.
//!
//! Each tree keeps a virtual time `vtime`, the weight sum `wsum` of the entities that are
//! active *or still on the idle tree*, the active entities (backlogged, waiting for
//! service) and the idle entities (emptied while still "owed" service: finish time beyond
//! `vtime`). Service is counted in sectors; virtual time advances by
//! `served << 22 / wsum`. The next entity is the *eligible* one (start ≤ vtime) with the
//! smallest finish time. The kernel finds it in a red-black tree ordered by finish time
//! and augmented with each subtree's smallest start. Here the active entities are split:
//! the eligible ones ordered by finish time, the others by start time, and an entity
//! moves across when virtual time reaches its start (virtual time only grows while
//! entities are active, and a start does not change on the tree), so the lookup is the
//! first eligible entry (ties to the one inserted first). Timestamps are ordered as plain
//! integers in the trees: they would wrap only after 2^42 sectors of service at weight 1.

use iosched_core::FastMap;
use std::collections::BTreeMap;

/// `WFQ_SERVICE_SHIFT`.
const SERVICE_SHIFT: u32 = 22;

/// Identity of a scheduled entity (a BFQ queue).
pub(super) type QId = u64;

/// `bfq_delta`: virtual time for `service` sectors at `weight`.
pub(super) fn delta(service: u64, weight: u32) -> u64 {
    (service << SERVICE_SHIFT) / weight.max(1) as u64
}

/// `bfq_gt`: `a > b` on wrapping timestamps.
fn gt(a: u64, b: u64) -> bool {
    (a.wrapping_sub(b) as i64) > 0
}

/// Which tree an entity is on (`entity->tree`).
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub(super) enum Tree {
    #[default]
    None,
    Active,
    Idle,
}

/// `struct bfq_entity` (the fields a flat hierarchy uses).
#[derive(Clone, Debug, Default)]
pub(super) struct Entity {
    /// Service-tree index: 0 = RT, 1 = BE, 2 = IDLE.
    pub class: usize,
    pub weight: u32,
    /// Sectors the entity may receive in its slot.
    pub budget: u64,
    /// Sectors received in the current slot.
    pub service: u64,
    pub start: u64,
    pub finish: u64,
    pub tree: Tree,
    /// A weight to take at the next (re)queueing (`prio_changed` with its new weight).
    pub pending_weight: Option<u32>,
    /// A class to move to at the next (re)queueing (`new_ioprio_class`): only then, when
    /// the entity is on no tree (`update_class_too`).
    pub pending_class: Option<usize>,
    /// Insertion order on its tree (the rbtree's tie-break).
    seq: u64,
}

/// `struct bfq_service_tree`.
#[derive(Debug, Default)]
struct ServiceTree {
    vtime: u64,
    wsum: u64,
    /// Active entities with start ≤ vtime, by (finish, insertion); the others by (start,
    /// insertion).
    eligible: BTreeMap<(u64, u64), QId>,
    ineligible: BTreeMap<(u64, u64), QId>,
    /// Idle entities by (finish, insertion).
    idle: BTreeMap<(u64, u64), QId>,
}

/// `struct bfq_sched_data` of the root group, with its entities.
#[derive(Debug, Default)]
pub(super) struct Wf2q {
    trees: [ServiceTree; 3],
    entities: FastMap<QId, Entity>,
    in_service: Option<QId>,
    /// `bfq_class_idle_last_service` (jiffies; set at the first lookup, as the kernel
    /// sets it when the group is created).
    class_idle_last_service: Option<u64>,
    seq: u64,
    released: Vec<QId>,
    /// Entities whose pending weight was applied since the last call.
    reweighted: Vec<QId>,
    /// `sd->next_in_service`: cached, and updated only when the trees change, as in the
    /// kernel — so which queue is served next can depend on when it was looked up.
    next_in_service: Option<QId>,
    /// The clock and the IDLE-class period for lookups (jiffies).
    now_j: u64,
    idle_timeout: u64,
}

impl Wf2q {
    pub fn new(idle_timeout: u64) -> Wf2q {
        Wf2q { idle_timeout, ..Wf2q::default() }
    }
    /// The current time, for the IDLE-class guarantee of the lookups that follow.
    pub fn set_now(&mut self, now_j: u64) {
        self.now_j = now_j;
    }
    pub fn next_in_service(&self) -> Option<QId> {
        self.next_in_service
    }
    pub fn add(&mut self, q: QId, class: usize, weight: u32) {
        self.entities.insert(q, Entity { class, weight, ..Entity::default() });
    }
    /// Forget an entity that is on no tree and not in service.
    pub fn remove(&mut self, q: QId) {
        let e = self.entities.remove(&q).expect("entity exists");
        debug_assert!(e.tree == Tree::None && self.in_service != Some(q));
    }
    pub fn entity(&self, q: QId) -> &Entity {
        &self.entities[&q]
    }
    pub fn entity_mut(&mut self, q: QId) -> &mut Entity {
        self.entities.get_mut(&q).expect("entity exists")
    }
    pub fn in_service(&self) -> Option<QId> {
        self.in_service
    }
    pub fn vtime(&self, class: usize) -> u64 {
        self.trees[class].vtime
    }
    pub fn wsum(&self, class: usize) -> u64 {
        self.trees[class].wsum
    }

    fn calc_finish(&mut self, q: QId, service: u64) {
        let e = self.entity_mut(q);
        e.finish = e.start.wrapping_add(delta(service, e.weight));
    }

    fn insert(&mut self, q: QId, tree: Tree) {
        self.seq += 1;
        let seq = self.seq;
        let e = self.entities.get_mut(&q).unwrap();
        e.tree = tree;
        e.seq = seq;
        let st = &mut self.trees[e.class];
        match tree {
            Tree::Active => {
                if gt(e.start, st.vtime) {
                    st.ineligible.insert((e.start, seq), q);
                } else {
                    st.eligible.insert((e.finish, seq), q);
                }
            }
            Tree::Idle => {
                st.idle.insert((e.finish, seq), q);
            }
            Tree::None => unreachable!(),
        }
    }

    fn extract(&mut self, q: QId) {
        let e = self.entities.get_mut(&q).unwrap();
        let st = &mut self.trees[e.class];
        let found = match e.tree {
            Tree::Active => st.eligible.remove(&(e.finish, e.seq)).or_else(|| st.ineligible.remove(&(e.start, e.seq))),
            Tree::Idle => st.idle.remove(&(e.finish, e.seq)),
            Tree::None => return,
        };
        debug_assert_eq!(found, Some(q), "entity on its tree under its timestamps");
        e.tree = Tree::None;
    }

    /// `bfq_forget_entity`: its weight leaves `wsum`.
    fn forget(&mut self, q: QId) {
        let e = &self.entities[&q];
        self.trees[e.class].wsum -= e.weight as u64;
    }

    /// `__bfq_entity_update_weight_prio` for a pending weight: the entity takes it, and
    /// `wsum` follows if the entity counts there.
    pub fn apply_pending_weight(&mut self, q: QId) {
        let counted = self.in_service == Some(q) || self.entity(q).tree != Tree::None;
        self.apply_weight(q, counted, false);
    }

    /// The weight, and with `update_class_too` the class, the entity was waiting for. A
    /// new class means a new service tree: the entity joins it at its virtual time.
    fn apply_weight(&mut self, q: QId, counted: bool, update_class_too: bool) {
        let e = self.entity_mut(q);
        let class = if update_class_too { e.pending_class.take() } else { None };
        if e.pending_weight.is_none() && class.is_none() {
            return;
        }
        let (old_w, old_class) = (e.weight, e.class);
        let w = e.pending_weight.take().unwrap_or(old_w);
        let new_class = class.unwrap_or(old_class);
        e.weight = w;
        e.class = new_class;
        if counted {
            self.trees[old_class].wsum -= old_w as u64;
            self.trees[new_class].wsum += w as u64;
        }
        if new_class != old_class {
            let vtime = self.trees[new_class].vtime;
            self.entity_mut(q).start = vtime;
        }
        self.reweighted.push(q);
    }

    /// Entities that took a new weight since the last call.
    pub fn take_reweighted(&mut self) -> Vec<QId> {
        std::mem::take(&mut self.reweighted)
    }

    /// `bfq_update_fin_time_enqueue`: a pending weight applies, then the finish from the
    /// budget, the back-shift limit, and onto the active tree.
    fn fin_time_enqueue(&mut self, q: QId, backshifted: bool, wr_coeff: u32) {
        // Every caller has the entity counted in `wsum` by now, and off every tree.
        self.apply_weight(q, true, true);
        let budget = self.entity(q).budget;
        self.calc_finish(q, budget);
        let class = self.entity(q).class;
        let vtime = self.trees[class].vtime;
        let e = self.entity_mut(q);
        if backshifted && gt(vtime, e.finish) {
            let d = vtime.wrapping_sub(e.finish) / wr_coeff.max(1) as u64;
            e.start = e.start.wrapping_add(d);
            e.finish = e.finish.wrapping_add(d);
        }
        self.insert(q, Tree::Active);
    }

    /// `__bfq_activate_entity`: a queue that got backlogged. With `non_blocking_wait_rq`
    /// (it left only because it was briefly empty) its start goes back to its old finish
    /// time instead of `vtime`.
    /// `wr_coeff` is the queue's weight-raising factor: a back-shifted raised queue is
    /// pushed forward by only that fraction of its lag.
    pub fn activate(&mut self, q: QId, non_blocking_wait_rq: bool, wr_coeff: u32) {
        let (class, finish, tree, weight) = {
            let e = self.entity(q);
            (e.class, e.finish, e.tree, e.weight)
        };
        let vtime = self.trees[class].vtime;
        let (min_vstart, backshifted) =
            if non_blocking_wait_rq && gt(vtime, finish) { (finish, true) } else { (vtime, false) };
        match tree {
            Tree::Idle => {
                self.entity_mut(q).start = if gt(min_vstart, finish) { min_vstart } else { finish };
                self.extract(q);
            }
            Tree::None => {
                self.entity_mut(q).start = min_vstart;
                self.trees[class].wsum += weight as u64;
            }
            Tree::Active => unreachable!("activating an active entity"),
        }
        self.fin_time_enqueue(q, backshifted, wr_coeff);
        self.update_next_in_service(Some(q), false);
    }

    /// `__bfq_requeue_entity` for the in-service entity (expired with backlog): its
    /// start moves past the service it received, its finish follows its new budget.
    pub fn requeue_in_service(&mut self, q: QId) {
        debug_assert_eq!(self.in_service, Some(q));
        let service = self.entity(q).service;
        self.calc_finish(q, service);
        let e = self.entity_mut(q);
        e.start = e.finish;
        self.fin_time_enqueue(q, false, 1);
        self.in_service = None;
        self.update_next_in_service(Some(q), true);
    }

    /// `__bfq_requeue_entity` for an active entity not in service whose budget changed:
    /// the finish time follows the new budget and the entity is repositioned.
    pub fn requeue_active(&mut self, q: QId) {
        debug_assert_eq!(self.entity(q).tree, Tree::Active);
        self.extract(q);
        self.fin_time_enqueue(q, false, 1);
        self.update_next_in_service(Some(q), false);
    }

    /// `bfq_deactivate_entity(entity, ins_into_idle_tree = true, expiration)`: the queue
    /// emptied. Its finish follows the service it received; an entity still owed service
    /// (finish beyond `vtime`) waits on the idle tree with its weight in `wsum`,
    /// otherwise it is forgotten. A queue not in service also loses its service count
    /// (nobody resets it at an expiration).
    pub fn deactivate(&mut self, q: QId, expiration: bool) {
        let was_in_service = self.in_service == Some(q);
        let tree = self.entity(q).tree;
        if tree == Tree::None && !was_in_service {
            return; // not on a service tree (`on_st_or_in_serv` is false)
        }
        // Off its tree first: the trees are keyed by the timestamps about to change.
        self.extract(q);
        let service = self.entity(q).service;
        self.calc_finish(q, service);
        if was_in_service {
            self.in_service = None;
        } else {
            self.entity_mut(q).service = 0;
        }
        let (class, finish) = (self.entity(q).class, self.entity(q).finish);
        if gt(finish, self.trees[class].vtime) {
            self.insert(q, Tree::Idle);
        } else {
            self.forget(q);
        }
        if self.next_in_service == Some(q) {
            self.update_next_in_service(None, expiration);
        }
    }

    /// `bfq_update_next_in_service`: a changed entity that is eligible, of the same class
    /// and finishes earlier replaces the cached next one without a lookup; otherwise the
    /// next one is looked up (moving vtime only if nothing is in service, or during an
    /// expiration).
    fn update_next_in_service(&mut self, new: Option<QId>, expiration: bool) {
        let mut next = self.next_in_service;
        let mut without_lookup = false;
        if let Some(n) = new
            && Some(n) != next
        {
            without_lookup = match next {
                None => true,
                Some(cur) => {
                    let (ne, ce) = (self.entity(n), self.entity(cur));
                    ne.class == ce.class && !gt(ne.start, self.trees[ne.class].vtime) && gt(ce.finish, ne.finish)
                }
            };
            if without_lookup {
                next = Some(n);
            }
        }
        if !without_lookup {
            next = self.lookup_next(expiration);
        }
        self.next_in_service = next;
    }

    /// `bfq_bfqq_served`: charge `served` sectors and advance virtual time.
    pub fn served(&mut self, q: QId, served: u64) {
        let e = self.entity_mut(q);
        e.service += served;
        let class = e.class;
        let st = &self.trees[class];
        let v = st.vtime.wrapping_add(delta(served, st.wsum.max(1) as u32));
        self.set_vtime(class, v);
        self.forget_idle(class);
    }

    /// Move virtual time; entities whose start it reaches become eligible.
    fn set_vtime(&mut self, class: usize, v: u64) {
        let st = &mut self.trees[class];
        st.vtime = v;
        while let Some((&(start, seq), &q)) = st.ineligible.first_key_value()
            && !gt(start, v)
        {
            st.ineligible.pop_first();
            st.eligible.insert((self.entities[&q].finish, seq), q);
        }
    }

    fn active_is_empty(&self, class: usize) -> bool {
        self.trees[class].eligible.is_empty() && self.trees[class].ineligible.is_empty()
    }

    /// `bfq_forget_idle`: if nothing is active, jump vtime to the last idle finish time;
    /// release the first idle entity once vtime has passed its finish.
    fn forget_idle(&mut self, class: usize) {
        let first = self.extreme_idle(class, false);
        let last = self.extreme_idle(class, true);
        let vtime = self.trees[class].vtime;
        if self.active_is_empty(class)
            && let Some(l) = last
            && !gt(self.entity(l).finish, vtime)
        {
            let f = self.entity(l).finish;
            self.set_vtime(class, f);
        }
        let vtime = self.trees[class].vtime;
        if let Some(f) = first
            && !gt(self.entity(f).finish, vtime)
        {
            self.extract(f);
            self.forget(f);
            self.released.push(f);
        }
    }

    /// The idle entity with the smallest (or largest) finish time.
    fn extreme_idle(&self, class: usize, largest: bool) -> Option<QId> {
        let idle = &self.trees[class].idle;
        if largest { idle.values().next_back() } else { idle.values().next() }.copied()
    }

    /// Entities released from the idle trees since the last call (their owner may free
    /// them now).
    pub fn take_released(&mut self) -> Vec<QId> {
        std::mem::take(&mut self.released)
    }

    /// `__bfq_lookup_next_entity`: the eligible active entity with the smallest finish,
    /// after jumping vtime to the smallest start if nothing is eligible (the jump is only
    /// evaluated, not made, while an entity is in service).
    fn lookup_in(&mut self, class: usize, in_service: bool) -> Option<QId> {
        let st = &self.trees[class];
        if let Some((_, &q)) = st.eligible.first_key_value() {
            return Some(q); // the smallest start is eligible already: no jump
        }
        let (&(min_start, _), _) = st.ineligible.first_key_value()?;
        if !in_service {
            self.set_vtime(class, min_start);
            self.forget_idle(class);
            return self.trees[class].eligible.first_key_value().map(|(_, &q)| q);
        }
        // While an entity is in service the jump is only evaluated: those starting at the
        // would-be vtime are the eligible ones.
        self.trees[class]
            .ineligible
            .range(..=(min_start, u64::MAX))
            .map(|(&(_, seq), &q)| (self.entities[&q].finish, seq, q))
            .min()
            .map(|(_, _, q)| q)
    }

    /// `bfq_lookup_next_entity`: classes in priority order, except that the IDLE class is
    /// served once every `idle_timeout` jiffies if it has an active entity.
    fn lookup_next(&mut self, expiration: bool) -> Option<QId> {
        let in_service = self.in_service.is_some() && !expiration;
        let mut first_class = 0;
        let now_j = self.now_j;
        let last = *self.class_idle_last_service.get_or_insert(now_j);
        if now_j > last.saturating_add(self.idle_timeout) {
            if !self.active_is_empty(2) {
                first_class = 2;
            }
            self.class_idle_last_service = Some(now_j);
        }
        (first_class..3).find_map(|c| self.lookup_in(c, in_service))
    }

    /// `bfq_get_next_queue`: the cached next entity goes in service and leaves the active
    /// tree while it is served; the next one after it is looked up (vtime stays).
    pub fn set_in_service(&mut self) -> Option<QId> {
        debug_assert!(self.in_service.is_none());
        let q = self.next_in_service?;
        self.extract(q);
        self.in_service = Some(q);
        self.update_next_in_service(None, false);
        Some(q)
    }

    /// How many entities are on the active tree of `class` (for debug output).
    pub fn active_len(&self, class: usize) -> usize {
        self.trees[class].eligible.len() + self.trees[class].ineligible.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(weights: &[u32], budget: u64) -> Wf2q {
        let mut w = Wf2q::new(u64::MAX);
        for (i, &wt) in weights.iter().enumerate() {
            w.add(i as QId, 1, wt);
            w.entity_mut(i as QId).budget = budget;
            w.activate(i as QId, false, 1);
        }
        w
    }

    /// Serve whole budgets, always requeueing: the service each entity gets is
    /// proportional to its weight (WF2Q+'s guarantee), in any window of whole rounds.
    #[test]
    fn service_is_proportional_to_weight() {
        let mut w = tree(&[10, 20, 40], 100);
        let mut got = [0u64; 3];
        for _ in 0..700 {
            let q = w.set_in_service().unwrap();
            w.served(q, 100);
            got[q as usize] += 100;
            w.requeue_in_service(q);
            w.entity_mut(q).service = 0; // bfq_bfqq_expire does this after the requeue
        }
        assert_eq!(got, [10_000, 20_000, 40_000]);
    }

    /// B-WF2Q+'s relative fairness: over any interval in which two entities are both
    /// backlogged, the service each receives divided by its weight differs by at most a
    /// couple of maximum budgets divided by the weights — whatever the budgets, the
    /// service actually charged per slot (up to the maximum budget, more than the budget
    /// as `bfq_bfqq_charge_time` may charge), the weights, or entities emptying and
    /// coming back (not back-shifted). Checked at every slot boundary, for every pair,
    /// over 300 random runs.
    ///
    /// The bound is WF2Q+'s, one maximum budget per entity (`B/w_a + B/w_b`), doubled for
    /// budgets that change between slots and charges beyond the budget; the worst seen
    /// here is 1.10 of the undoubled bound (printed with `--nocapture`). It catches a
    /// finish time that ignores the weight, a requeue that does not move the start past
    /// the service received, and a virtual time that ignores the weight sum. It does not
    /// catch a lookup that ignores eligibility (plain smallest finish, 1.78): relative
    /// fairness is what WF2Q+ shares with WFQ, not what sets them apart. This is the
    /// guarantee the time bound in the policies' `no_request_waits_beyond_its_bound`
    /// lacks: it counts charged service, not slots or time.
    #[test]
    fn backlogged_pairs_stay_within_the_relative_fairness_bound() {
        const B_MAX: u64 = 16384;
        const K: f64 = 2.0;
        let mut worst: f64 = 0.0;
        for seed in 1..=300u64 {
            let mut rng = iosched_core::Rng::new(seed);
            let mut next = move |n: u64| rng.below(n);
            let n = 2 + next(5) as usize;
            let weights: Vec<u32> = (0..n).map(|_| 1 + next(100) as u32).collect();
            let mut w = Wf2q::new(u64::MAX);
            let mut backlogged = vec![true; n];
            for (i, &wt) in weights.iter().enumerate() {
                w.add(i as QId, 1, wt);
                w.entity_mut(i as QId).budget = 1 + next(B_MAX);
                w.activate(i as QId, false, 1);
            }
            let mut got = vec![0u64; n];
            // Per pair: the service both had when the pair's common backlog began.
            let mut base: Vec<Vec<(u64, u64)>> = vec![vec![(0, 0); n]; n];
            for _ in 0..400 {
                let Some(q) = w.set_in_service() else { break };
                let i = q as usize;
                let budget = w.entity(q).budget;
                // Mostly within the budget; sometimes a time charge beyond it.
                let s = if next(4) == 0 { 1 + next(B_MAX) } else { 1 + next(budget) };
                if s > budget {
                    w.entity_mut(q).budget = s;
                }
                w.served(q, s);
                got[i] += s;
                if next(5) == 0 {
                    w.deactivate(q, true);
                    w.entity_mut(q).service = 0;
                    backlogged[i] = false;
                } else {
                    w.entity_mut(q).budget = 1 + next(B_MAX);
                    w.requeue_in_service(q);
                    w.entity_mut(q).service = 0;
                }
                // An emptied entity comes back now and then.
                let j = next(n as u64) as usize;
                if !backlogged[j] && next(2) == 0 {
                    w.entity_mut(j as QId).budget = 1 + next(B_MAX);
                    w.activate(j as QId, false, 1);
                    backlogged[j] = true;
                    for k in 0..n {
                        base[j][k] = (got[j], got[k]);
                        base[k][j] = (got[k], got[j]);
                    }
                }
                for a in 0..n {
                    for b in 0..n {
                        if a == b || !backlogged[a] || !backlogged[b] {
                            continue;
                        }
                        let (wa, wb) = (weights[a] as f64, weights[b] as f64);
                        let lag = (got[a] - base[a][b].0) as f64 / wa - (got[b] - base[a][b].1) as f64 / wb;
                        let bound = B_MAX as f64 * (1.0 / wa + 1.0 / wb);
                        worst = worst.max(lag / bound);
                        assert!(
                            lag <= K * bound,
                            "seed {seed}: {a} (w {wa}) leads {b} (w {wb}) by {lag:.0} normalized sectors > {K}×{bound:.0}"
                        );
                    }
                }
            }
        }
        eprintln!("worst lag / (B_MAX/wa + B_MAX/wb): {worst:.3}");
    }

    /// An entity that empties before its finish time waits on the idle tree and keeps
    /// its weight in `wsum`; vtime passing its finish releases it.
    #[test]
    fn idle_tree_holds_weight_until_vtime_passes() {
        let mut w = tree(&[10, 10], 100);
        let q = w.set_in_service().unwrap();
        w.served(q, 10);
        w.deactivate(q, true);
        assert_eq!(w.entity(q).tree, Tree::Idle);
        assert_eq!(w.wsum(1), 20);
        let other = 1 - q;
        assert_eq!(w.set_in_service(), Some(other));
        w.served(other, 100);
        assert_eq!(w.entity(q).tree, Tree::None, "vtime passed its finish: forgotten");
        assert_eq!(w.wsum(1), 10);
    }

    /// Reactivated from the idle tree, an entity restarts at its old finish time (it
    /// does not get the service it skipped), and the RT class goes first.
    #[test]
    fn restart_from_idle_finish_and_class_priority() {
        let mut w = tree(&[10, 10], 100);
        let q = w.set_in_service().unwrap();
        w.served(q, 50);
        w.deactivate(q, true);
        let f = w.entity(q).finish;
        w.entity_mut(q).budget = 100;
        w.activate(q, false, 1);
        assert_eq!(w.entity(q).start, f);
        w.add(9, 0, 10);
        w.entity_mut(9).budget = 100;
        w.activate(9, false, 1);
        assert_eq!(w.next_in_service(), Some(9));
    }
}
