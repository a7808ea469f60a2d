// Package gossip is the agents' failure detector. Agents form a
// hashicorp/memberlist cluster (SWIM with Lifeguard's suspicion and
// indirect probes) and turn what it concludes into idempotent writes to
// the API, which stays the source of truth: when an agent's memberlist
// declares a peer dead, the agent annotates the peer's Node with a report
// of its own,
//
//	gossip.cairn.io/dead-by.<reporter>: "2025-01-02T15:04:05Z"
//
// with a JSON merge patch, and the node lifecycle controller marks the node
// NotReady once Agreed says enough peers concur, without waiting for the
// node's Lease to expire.
//
// Reports go away the same way. A reporter removes its own when it sees the
// node alive again (or leave gracefully); an agent that starts removes
// every report about its own node; and any agent that sees a node alive
// removes the reports about it left by reporters it sees dead or whose
// Node is gone, so a report never outlives the reporter that could take it
// back. A periodic pass over all Nodes redoes whatever an event or a write
// missed.
//
// A worked example, five nodes a..e, e killed with kill -9:
//
//	t=0     e stops answering.
//	t≈0.2s  a probes e: no ack, no indirect ack through b, c, d: a suspects
//	        e and gossips it; b, c and d start suspicion timers too.
//	t≈0.6s  b and c probe e and fail as well: their suspicions confirm a's,
//	        which shortens the timers towards their minimum.
//	t≈1.2s  a's timer fires: a declares e dead and gossips it; within a
//	        gossip interval b, c and d accept it.
//	t≈1.3s  a, b, c and d each patch Node e with their report. With the
//	        second one, Agreed(e, 4) holds: the controller marks e NotReady.
//	later   e restarts: it joins, removes the reports on Node e, and as a..d
//	        see it alive they remove theirs (again, harmlessly).
//
// Membership comes from --gossip-join and from the Node objects: each agent
// publishes its gossip address on its Node (gossip.cairn.io/address), and
// peers without one are tried at their InternalIP on this agent's port.
package gossip
