package jobstore

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// What a store of several shards (Sharded: Redis stores; Owned: logs)
// does with its shards' answers to a read across tenants, the same way
// whatever the shards are.

// head is a job at the head of a pool's queue, with its queue score.
type head struct {
	job   *Job
	score float64
}

// topHeads merges the shards' queue heads: the limit lowest scores, ties
// by id.
func topHeads(parts [][]head, limit int) []*Job {
	all := slices.Concat(parts...)
	slices.SortFunc(all, func(a, b head) int {
		return cmp.Or(cmp.Compare(a.score, b.score), strings.Compare(a.job.ID, b.job.ID))
	})
	out := make([]*Job, 0, min(limit, len(all)))
	for _, h := range all[:min(limit, len(all))] {
		out = append(out, h.job)
	}
	return out
}

// headsOf pairs jobs with their scores.
func headsOf(jobs []*Job, scores []float64) []head {
	out := make([]head, len(jobs))
	for i := range jobs {
		out[i] = head{jobs[i], scores[i]}
	}
	return out
}

// sumLens adds the shards' queue lengths, pool by pool.
func sumLens(parts [][]int, pools int) []int {
	out := make([]int, pools)
	for _, p := range parts {
		for i, n := range p {
			out[i] += n
		}
	}
	return out
}

// byRank orders jobs as rank says (job id -> place; those it does not
// name last), keeping the order of equals.
func byRank(jobs []*Job, rank map[string]int) {
	slices.SortStableFunc(jobs, func(a, b *Job) int {
		ra, oka := rank[a.ID]
		rb, okb := rank[b.ID]
		if !oka {
			ra = len(rank)
		}
		if !okb {
			rb = len(rank)
		}
		return cmp.Compare(ra, rb)
	})
}

// newestRuns merges the shards' runs: the limit newest, ties by id.
func newestRuns(parts [][]*Run, limit int) []*Run {
	all := slices.Concat(parts...)
	slices.SortFunc(all, func(a, b *Run) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	return all[:min(limit, len(all))]
}

// newestDLQ merges the shards' DLQ entries: the limit newest.
func newestDLQ(parts [][]DLQEntry, limit int) []DLQEntry {
	all := slices.Concat(parts...)
	slices.SortStableFunc(all, func(a, b DLQEntry) int { return b.At.Compare(a.At) })
	return all[:min(limit, len(all))]
}

// sumCounts adds the shards' counts.
func sumCounts(parts []Counts) Counts {
	c := make(Counts)
	for _, p := range parts {
		for st, v := range p {
			c[st] += v
		}
	}
	return c
}

// sumThroughput adds the shards' steps.
func sumThroughput(until time.Time, step time.Duration, n int, parts []*Throughput) *Throughput {
	t := newThroughput(until, step, n)
	for _, p := range parts {
		t.add(p)
	}
	return t
}
