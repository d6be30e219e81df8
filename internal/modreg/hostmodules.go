package modreg

import (
	"maps"
	"slices"
)

// HostModule is a module live hosts serve of their own (their --modules
// directory: the built-in ones), which the registry does not hold.
type HostModule struct {
	Name string
	// Digests are the versions hosts serve, each with how many hosts
	// serve it, sorted by digest.
	Digests []HostDigest
}

// HostDigest is a version of a host's own module and how many live hosts
// serve it.
type HostDigest struct {
	Digest string `json:"digest"`
	Hosts  int    `json:"hosts"`
}

// HostModules returns the modules live hosts serve of their own: each
// name and digest in served (each live host's modules, name → digest, as
// its heartbeat reports them) that no version of ms has, sorted by name.
// `ward module ls` and the gateway's modules list them beside the
// registry's.
func HostModules(ms []Module, served []map[string]string) []HostModule {
	inRegistry := map[string]bool{} // name + "@" + digest
	for _, m := range ms {
		for _, v := range m.Versions {
			inRegistry[m.Name+"@"+v.Digest] = true
		}
	}
	hosts := map[string]map[string]int{} // name -> digest -> hosts
	for _, mods := range served {
		for name, digest := range mods {
			if inRegistry[name+"@"+digest] {
				continue
			}
			if hosts[name] == nil {
				hosts[name] = map[string]int{}
			}
			hosts[name][digest]++
		}
	}
	out := make([]HostModule, 0, len(hosts))
	for _, name := range slices.Sorted(maps.Keys(hosts)) {
		hm := HostModule{Name: name}
		for _, d := range slices.Sorted(maps.Keys(hosts[name])) {
			hm.Digests = append(hm.Digests, HostDigest{Digest: d, Hosts: hosts[name][d]})
		}
		out = append(out, hm)
	}
	return out
}
