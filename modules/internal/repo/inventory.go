package repo

// repo-tests: a repository's test inventory, read from its files alone (a
// sandbox cannot run the project's toolchain). Inventory accumulates it
// file by file, keeping a few numbers a file, and Result resolves which
// code the tests cover and sorts everything.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Caps on what a test inventory lists (the totals count everything).
const (
	MaxListedPackages = 10_000
	MaxListedUntested = 1_000
	MaxListedSkipped  = 1_000
	maxExported       = 50 // exported Go functions listed for an untested package
	maxEvidence       = 20 // evidence entries listed for a framework
	maxEvidenceFiles  = 3  // example files listed for an evidence entry
	maxCoveredBy      = 5  // directories listed as covering a package
)

// Coverage of a package in a TestInventory.
const (
	CoverageOwn       = "own"        // test files in the package's directory
	CoverageInline    = "inline"     // tests inside its source files (Rust #[cfg(test)])
	CoverageElsewhere = "elsewhere"  // test files in another directory name or import it
	CoverageNone      = "none"       // no test found
	CoverageTestsOnly = "tests-only" // a directory of tests and no source
)

// TestCounts counts tests, statically: what a runner would collect, not
// what it would run.
type TestCounts struct {
	// Tests: Go TestXxx, Python test* functions and methods of Test*
	// classes, JS/TS it()/test() calls (an .each counts once), Java and
	// Kotlin @Test methods, Rust #[test] functions, RSpec examples, ...
	Tests         int `json:"tests"`
	Benchmarks    int `json:"benchmarks,omitempty"` // Go BenchmarkXxx, Rust #[bench]
	Fuzz          int `json:"fuzz,omitempty"`       // Go FuzzXxx
	Examples      int `json:"examples,omitempty"`   // Go ExampleXxx
	Suites        int `json:"suites,omitempty"`     // describe blocks, test classes, #[cfg(test)] modules
	Subtests      int `json:"subtests,omitempty"`   // Go t.Run call sites, Catch2 SECTIONs
	Parameterized int `json:"parameterized,omitempty"`
	Disabled      int `json:"disabled,omitempty"` // skipped, ignored or pending tests
}

func (c *TestCounts) add(o TestCounts) {
	c.Tests += o.Tests
	c.Benchmarks += o.Benchmarks
	c.Fuzz += o.Fuzz
	c.Examples += o.Examples
	c.Suites += o.Suites
	c.Subtests += o.Subtests
	c.Parameterized += o.Parameterized
	c.Disabled += o.Disabled
}

// CodeStats counts source and test files and their lines.
type CodeStats struct {
	SourceFiles int `json:"source_files"`
	TestFiles   int `json:"test_files"`
	SourceLines int `json:"source_lines"`
	TestLines   int `json:"test_lines"`
}

func (s *CodeStats) add(o CodeStats) {
	s.SourceFiles += o.SourceFiles
	s.TestFiles += o.TestFiles
	s.SourceLines += o.SourceLines
	s.TestLines += o.TestLines
}

// TestInventory is repo-tests' result.
type TestInventory struct {
	Tool       string          `json:"tool"` // "repo-tests"
	Totals     TestTotals      `json:"totals"`
	Languages  []LanguageTests `json:"languages"`  // by language
	Frameworks []TestFramework `json:"frameworks"` // by name
	Packages   []PackageTests  `json:"packages"`   // by directory, then language
	Untested   []UntestedCode  `json:"untested"`   // largest first
	// Skipped names what was not inventoried and why ("path: reason"),
	// sorted; a skipped directory (vendor/, node_modules/, testdata/) is
	// one entry. SkippedCounts counts files by reason.
	Skipped       []string       `json:"skipped"`
	SkippedCounts map[string]int `json:"skipped_counts"`
	// Truncated says which lists were cut at their caps.
	Truncated []string `json:"truncated,omitempty"`
}

// TestTotals sums the inventory.
type TestTotals struct {
	Files       int `json:"files"`        // every regular file read
	ConfigFiles int `json:"config_files"` // code that configures (jest.config.js, setup.py, *.d.ts)
	CodeStats
	TestCounts
	Packages         int `json:"packages"` // directories with source, per language
	TestedPackages   int `json:"tested_packages"`
	UntestedPackages int `json:"untested_packages"`
	UntestedLines    int `json:"untested_lines"`
	// Ratio is test lines per source line, absent without source.
	Ratio *float64 `json:"ratio,omitempty"`
}

// LanguageTests sums one language.
type LanguageTests struct {
	Language string `json:"language"`
	CodeStats
	TestCounts
	Packages         int      `json:"packages"`
	TestedPackages   int      `json:"tested_packages"`
	UntestedPackages int      `json:"untested_packages"`
	Ratio            *float64 `json:"ratio,omitempty"`
	Frameworks       []string `json:"frameworks"`
}

// PackageTests is one directory's files of one language (a Go package,
// a Python package, a JS/TS folder, ...).
type PackageTests struct {
	Dir      string `json:"dir"` // "." for the root
	Language string `json:"language"`
	CodeStats
	TestCounts
	Ratio *float64 `json:"ratio,omitempty"`
	// Coverage is CoverageOwn, CoverageInline, CoverageElsewhere,
	// CoverageNone or CoverageTestsOnly; Tested is true for the first
	// three.
	Coverage string `json:"coverage"`
	Tested   bool   `json:"tested"`
	// CoveredBy lists directories whose tests import this package, share
	// its Java package, or are named after its files (CoverageElsewhere).
	CoveredBy []string `json:"covered_by,omitempty"`
}

// UntestedCode is a package with source and no test.
type UntestedCode struct {
	Dir         string `json:"dir"`
	Language    string `json:"language"`
	SourceFiles int    `json:"source_files"`
	SourceLines int    `json:"source_lines"`
	GoPackage   string `json:"go_package,omitempty"`
	// Exported lists a Go package's exported functions and methods (the
	// first maxExported by file and line); ExportedTotal counts them all.
	Exported      []Symbol `json:"exported,omitempty"`
	ExportedTotal int      `json:"exported_total,omitempty"`
}

// Symbol is a declaration in a file.
type Symbol struct {
	Name string `json:"name"` // "Func" or "Type.Method"
	File string `json:"file"`
	Line int    `json:"line"`
}

// TestFramework is a framework or test tool the repository uses.
type TestFramework struct {
	Name      string   `json:"name"`
	Languages []string `json:"languages"`
	// TestFiles counts test files (and source files with inline tests)
	// that import or use it.
	TestFiles int        `json:"test_files"`
	Evidence  []Evidence `json:"evidence"`
}

// Evidence is how a framework was recognised.
type Evidence struct {
	// Via is "config" (jest.config.js, pytest.ini, [tool.pytest...]),
	// "dependency" (go.mod, package.json, pom.xml, Cargo.toml, Gemfile,
	// requirements), "script" (package.json scripts, tox, Makefile),
	// "import" (imports, requires, usings, includes) or "syntax"
	// (annotations, attributes, calls such as jest.fn).
	Via    string   `json:"via"`
	Detail string   `json:"detail"`
	Files  []string `json:"files"` // the first few, by path
	Count  int      `json:"count"` // files that show it
}

// Inventory accumulates a TestInventory, file by file.
type Inventory struct {
	files, configFiles int
	pkgs               map[invKey]*invPkg
	fws                map[string]*invFramework
	srcIndex           map[string]map[string][]invSrc // family → last element → source files
	claims             map[invClaim]struct{}
	langSeen           map[string]bool
	skipped            []string
	skipCounts         map[string]int
	skipDirs           map[string]*invSkipDir
}

type invKey struct{ dir, lang string }

type invPkg struct {
	CodeStats
	TestCounts
	family        string
	inline        bool
	goPkg         string
	declPkgs      []string // Java/Kotlin/Scala packages its sources declare
	exported      []Symbol
	exportedTotal int
	coveredBy     map[string]bool
}

type invSrc struct {
	noExt string // the path without its extension
	key   invKey
}

// invClaim says a test file's directory covers the code a path names.
type invClaim struct {
	family, from, path string
	mode               int
}

const (
	claimDir     = iota // exactly this directory
	claimExact          // this directory, or the directory of this file (no extension)
	claimSuffix         // as claimExact, for any directory or file whose path ends so
	claimMirror         // files named so: the longest suffix of the path that names some
	claimPackage        // directories whose sources declare this JVM package
)

type invSkipDir struct {
	reason string
	files  int
}

type invFramework struct {
	langs     map[string]bool
	testFiles int
	evidence  map[[2]string]*invEvidence
}

type invEvidence struct {
	count int
	files []string
	last  string // the file that last showed it
}

// invFile is what Add learns of one code file.
type invFile struct {
	path, dir, lang, family string
	test                    bool
	lines                   int
	counts                  TestCounts
	uses                    []invUse
	declPkg                 string
	goPkg                   string
	exported                []Symbol
	claims                  []invClaim
}

type invUse struct{ fw, via, detail string }

func (fi *invFile) use(fw, via, detail string) {
	fi.uses = append(fi.uses, invUse{fw, via, detail})
}

func (fi *invFile) claim(mode int, p string) {
	if p == "" || strings.HasPrefix(p, "..") || strings.HasPrefix(p, "/") {
		return
	}
	fi.claims = append(fi.claims, invClaim{family: fi.family, from: fi.dir, path: p, mode: mode})
}

// invFamilies groups the languages whose tests may cover one another.
var invFamilies = map[string]string{
	"Go": "go", "Python": "python", "JavaScript": "js", "TypeScript": "js",
	"Java": "jvm", "Kotlin": "jvm", "Scala": "jvm", "Rust": "rust", "Ruby": "ruby",
	"C#": "csharp", "PHP": "php", "C": "c", "C++": "c", "Swift": "swift",
}

// invExtraLanguages are code extensions Language leaves out.
var invExtraLanguages = map[string]string{
	".cjs": "JavaScript", ".mts": "TypeScript", ".cts": "TypeScript",
	".cxx": "C++", ".hh": "C++", ".hxx": "C++",
}

func invLanguage(p string) string {
	if l := Language(p); l != "" {
		return l
	}
	return invExtraLanguages[strings.ToLower(path.Ext(p))]
}

// invSkippedDirs are directories whose files are not the project's code.
var invSkippedDirs = map[string]string{
	"vendor": "vendored", "node_modules": "vendored", "bower_components": "vendored",
	"jspm_packages": "vendored", "third_party": "vendored", "site-packages": "vendored",
	".venv": "vendored", "venv": "vendored", "Pods": "vendored", "testdata": "testdata",
	"__pycache__": "build_output", ".tox": "build_output", ".nox": "build_output",
	".mypy_cache": "build_output", ".pytest_cache": "build_output", ".gradle": "build_output",
	".next": "build_output", ".nuxt": "build_output",
}

// invSkippedDir returns the first skipped directory on p ("a/vendor/"),
// and why.
func invSkippedDir(p string) (string, string) {
	parts := strings.Split(p, "/")
	for i, part := range parts[:len(parts)-1] {
		if reason, ok := invSkippedDirs[part]; ok {
			return strings.Join(parts[:i+1], "/") + "/", reason
		}
	}
	return "", ""
}

var invReasons = map[string]string{
	"vendored":     "vendored code",
	"testdata":     "test data",
	"build_output": "build or tool output",
}

func (inv *Inventory) init() {
	if inv.pkgs != nil {
		return
	}
	inv.pkgs = map[invKey]*invPkg{}
	inv.fws = map[string]*invFramework{}
	inv.srcIndex = map[string]map[string][]invSrc{}
	inv.claims = map[invClaim]struct{}{}
	inv.langSeen = map[string]bool{}
	inv.skipCounts = map[string]int{}
	inv.skipDirs = map[string]*invSkipDir{}
}

func (inv *Inventory) skip(p, kind, why string) {
	inv.skipped = append(inv.skipped, p+": "+why)
	inv.skipCounts[kind]++
}

// Add inventories f. Only what the result needs is kept: counts, and for
// source files their path and (Go) exported names.
func (inv *Inventory) Add(f *File) {
	inv.init()
	inv.files++
	if d, reason := invSkippedDir(f.Path); d != "" {
		sd := inv.skipDirs[d]
		if sd == nil {
			sd = &invSkipDir{reason: reason}
			inv.skipDirs[d] = sd
		}
		sd.files++
		inv.skipCounts[reason]++
		return
	}
	if f.Binary {
		inv.skip(f.Path, "binary", "binary")
		return
	}
	if f.Data == nil {
		inv.skip(f.Path, "too_large", fmt.Sprintf("over %d MiB, not read", MaxFileBytes>>20))
		return
	}
	inv.config(f)
	lang := invLanguage(f.Path)
	family := invFamilies[lang]
	if family == "" {
		return
	}
	if invConfigCode(f.Path) {
		inv.configFiles++
		return
	}
	fi := &invFile{path: f.Path, dir: path.Dir(f.Path), lang: lang, family: family, lines: countLines(f.Data)}
	if family == "go" {
		if scanGo(f, fi) {
			inv.skip(f.Path, "generated", "generated")
			return
		}
	} else {
		if invGenerated(f) {
			inv.skip(f.Path, "generated", "generated")
			return
		}
		invScanners[family](f, fi)
	}
	inv.record(fi)
}

func countLines(data []byte) int {
	n := bytes.Count(data, []byte("\n"))
	if len(data) > 0 && data[len(data)-1] != '\n' {
		n++
	}
	return n
}

func (inv *Inventory) record(fi *invFile) {
	key := invKey{fi.dir, fi.lang}
	p := inv.pkgs[key]
	if p == nil {
		p = &invPkg{family: fi.family}
		inv.pkgs[key] = p
	}
	inv.langSeen[fi.lang] = true
	withTests := fi.test
	if fi.test {
		p.TestFiles++
		p.TestLines += fi.lines
		p.TestCounts.add(fi.counts)
		for _, c := range fi.claims {
			inv.claims[c] = struct{}{}
		}
		if fi.declPkg != "" {
			inv.claims[invClaim{family: fi.family, from: fi.dir, path: fi.declPkg, mode: claimPackage}] = struct{}{}
		}
	} else {
		p.SourceFiles++
		p.SourceLines += fi.lines
		if fi.counts != (TestCounts{}) {
			p.TestCounts.add(fi.counts)
			p.inline, withTests = true, true
		}
		noExt := strings.TrimSuffix(fi.path, path.Ext(fi.path))
		idx := inv.srcIndex[fi.family]
		if idx == nil {
			idx = map[string][]invSrc{}
			inv.srcIndex[fi.family] = idx
		}
		idx[path.Base(noExt)] = append(idx[path.Base(noExt)], invSrc{noExt, key})
		if fi.declPkg != "" && !slices.Contains(p.declPkgs, fi.declPkg) {
			p.declPkgs = append(p.declPkgs, fi.declPkg)
		}
		if fi.goPkg != "" && (p.goPkg == "" || fi.goPkg < p.goPkg) {
			p.goPkg = fi.goPkg
		}
		p.exportedTotal += len(fi.exported)
		p.exported = append(p.exported, fi.exported...)
		if len(p.exported) > 2*maxExported {
			p.exported = firstSymbols(p.exported)
		}
	}
	seen := map[string]bool{}
	for _, u := range fi.uses {
		fw := inv.framework(u.fw)
		fw.langs[fi.lang] = true
		inv.evidence(fw, u.via, u.detail, fi.path)
		if withTests && !seen[u.fw] {
			seen[u.fw] = true
			fw.testFiles++
		}
	}
}

func firstSymbols(s []Symbol) []Symbol {
	slices.SortFunc(s, func(a, b Symbol) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), strings.Compare(a.Name, b.Name))
	})
	return slices.Clip(s[:min(len(s), maxExported)])
}

func (inv *Inventory) framework(name string) *invFramework {
	fw := inv.fws[name]
	if fw == nil {
		fw = &invFramework{langs: map[string]bool{}, evidence: map[[2]string]*invEvidence{}}
		inv.fws[name] = fw
	}
	return fw
}

// evidence records that file shows framework fw via via, once a file.
func (inv *Inventory) evidence(fw *invFramework, via, detail, file string) {
	k := [2]string{via, detail}
	e := fw.evidence[k]
	if e == nil {
		e = &invEvidence{}
		fw.evidence[k] = e
	}
	if e.last == file {
		return // a file's evidence is recorded while it is read: once
	}
	e.last = file
	if i, _ := slices.BinarySearch(e.files, file); i < maxEvidenceFiles {
		e.files = slices.Insert(e.files, i, file)
		e.files = e.files[:min(len(e.files), maxEvidenceFiles)]
	}
	e.count++
}

// Result resolves coverage and returns the inventory, sorted. skipped is
// what the Source skipped.
func (inv *Inventory) Result(skipped []string) TestInventory {
	inv.init()
	res := TestInventory{Tool: "repo-tests", Languages: []LanguageTests{}, Frameworks: []TestFramework{},
		Packages: []PackageTests{}, Untested: []UntestedCode{}, SkippedCounts: map[string]int{}}
	inv.resolveClaims()

	keys := make([]invKey, 0, len(inv.pkgs))
	for k := range inv.pkgs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b invKey) int { return cmp.Or(strings.Compare(a.dir, b.dir), strings.Compare(a.lang, b.lang)) })
	langs := map[string]*LanguageTests{}
	tot := &res.Totals
	tot.Files, tot.ConfigFiles = inv.files, inv.configFiles
	for _, k := range keys {
		p := inv.pkgs[k]
		pt := PackageTests{Dir: k.dir, Language: k.lang, CodeStats: p.CodeStats, TestCounts: p.TestCounts, Ratio: ratio(p.TestLines, p.SourceLines)}
		switch {
		case p.SourceFiles == 0:
			pt.Coverage = CoverageTestsOnly
		case p.TestFiles > 0:
			pt.Coverage = CoverageOwn
		case p.inline:
			pt.Coverage = CoverageInline
		case len(p.coveredBy) > 0:
			pt.Coverage = CoverageElsewhere
			for d := range p.coveredBy {
				pt.CoveredBy = append(pt.CoveredBy, d)
			}
			slices.Sort(pt.CoveredBy)
			pt.CoveredBy = pt.CoveredBy[:min(len(pt.CoveredBy), maxCoveredBy)]
		default:
			pt.Coverage = CoverageNone
		}
		pt.Tested = pt.Coverage != CoverageNone && pt.Coverage != CoverageTestsOnly
		res.Packages = append(res.Packages, pt)

		l := langs[k.lang]
		if l == nil {
			l = &LanguageTests{Language: k.lang, Frameworks: []string{}}
			langs[k.lang] = l
		}
		l.CodeStats.add(p.CodeStats)
		l.TestCounts.add(p.TestCounts)
		tot.CodeStats.add(p.CodeStats)
		tot.TestCounts.add(p.TestCounts)
		if p.SourceLines == 0 {
			continue // tests only, or empty files (an empty __init__.py): nothing to test
		}
		l.Packages++
		tot.Packages++
		if pt.Tested {
			l.TestedPackages++
			tot.TestedPackages++
			continue
		}
		l.UntestedPackages++
		tot.UntestedPackages++
		tot.UntestedLines += p.SourceLines
		u := UntestedCode{Dir: k.dir, Language: k.lang, SourceFiles: p.SourceFiles, SourceLines: p.SourceLines, GoPackage: p.goPkg}
		if p.goPkg != "main" {
			u.Exported, u.ExportedTotal = firstSymbols(p.exported), p.exportedTotal
		}
		res.Untested = append(res.Untested, u)
	}
	tot.Ratio = ratio(tot.TestLines, tot.SourceLines)
	slices.SortFunc(res.Untested, func(a, b UntestedCode) int {
		return cmp.Or(cmp.Compare(b.SourceLines, a.SourceLines), cmp.Compare(b.SourceFiles, a.SourceFiles),
			strings.Compare(a.Dir, b.Dir), strings.Compare(a.Language, b.Language))
	})
	if n := len(res.Packages); n > MaxListedPackages {
		res.Packages = res.Packages[:MaxListedPackages]
		res.Truncated = append(res.Truncated, fmt.Sprintf("packages: the first %d of %d listed", MaxListedPackages, n))
	}
	if n := len(res.Untested); n > MaxListedUntested {
		res.Untested = res.Untested[:MaxListedUntested]
		res.Truncated = append(res.Truncated, fmt.Sprintf("untested: the largest %d of %d listed", MaxListedUntested, n))
	}

	res.Frameworks = inv.frameworks()
	for _, fw := range res.Frameworks {
		for _, lang := range fw.Languages {
			if l := langs[lang]; l != nil {
				l.Frameworks = append(l.Frameworks, fw.Name)
			}
		}
	}
	for _, l := range langs {
		l.Ratio = ratio(l.TestLines, l.SourceLines)
		res.Languages = append(res.Languages, *l)
	}
	slices.SortFunc(res.Languages, func(a, b LanguageTests) int { return strings.Compare(a.Language, b.Language) })

	res.Skipped = append(slices.Clone(skipped), inv.skipped...)
	res.SkippedCounts = inv.skipCounts
	if len(skipped) > 0 {
		res.SkippedCounts["not_read"] = len(skipped)
	}
	for d, sd := range inv.skipDirs {
		res.Skipped = append(res.Skipped, fmt.Sprintf("%s: %s (%d files)", d, invReasons[sd.reason], sd.files))
	}
	slices.Sort(res.Skipped)
	if n := len(res.Skipped); n > MaxListedSkipped {
		res.Skipped = res.Skipped[:MaxListedSkipped]
		res.Truncated = append(res.Truncated, fmt.Sprintf("skipped: the first %d of %d listed", MaxListedSkipped, n))
	}
	if res.Skipped == nil {
		res.Skipped = []string{}
	}
	return res
}

func ratio(test, source int) *float64 {
	if source == 0 {
		return nil
	}
	r := math.Round(float64(test)/float64(source)*100) / 100
	return &r
}

// frameworkLanguages are the languages a framework seen only in
// configuration is credited to: those of them the repository has, else
// the first.
var frameworkLanguages = map[string][]string{
	"Jest": {"JavaScript", "TypeScript"}, "Vitest": {"JavaScript", "TypeScript"}, "Mocha": {"JavaScript", "TypeScript"},
	"Jasmine": {"JavaScript", "TypeScript"}, "Karma": {"JavaScript", "TypeScript"}, "AVA": {"JavaScript", "TypeScript"},
	"tape": {"JavaScript", "TypeScript"}, "Playwright": {"JavaScript", "TypeScript"}, "Cypress": {"JavaScript", "TypeScript"},
	"node:test": {"JavaScript", "TypeScript"}, "pytest": {"Python"}, "unittest": {"Python"}, "Hypothesis": {"Python"}, "nose": {"Python"},
	"Go testing": {"Go"}, "testify": {"Go"}, "gomock": {"Go"}, "Ginkgo": {"Go"}, "Gomega": {"Go"},
	"quicktest": {"Go"}, "gotest.tools": {"Go"}, "GoConvey": {"Go"}, "is": {"Go"},
	"JUnit 3": {"Java", "Kotlin"}, "JUnit 4": {"Java", "Kotlin", "Scala"}, "JUnit 5": {"Java", "Kotlin"},
	"TestNG": {"Java", "Kotlin"}, "Mockito": {"Java", "Kotlin"}, "kotlin.test": {"Kotlin"}, "Kotest": {"Kotlin"},
	"ScalaTest": {"Scala"}, "MUnit": {"Scala"},
	"Rust #[test]": {"Rust"}, "tokio::test": {"Rust"}, "rstest": {"Rust"}, "proptest": {"Rust"}, "Criterion": {"Rust"},
	"test-case": {"Rust"}, "mockall": {"Rust"}, "quickcheck": {"Rust"}, "insta": {"Rust"}, "wasm-bindgen-test": {"Rust"},
	"async-std test": {"Rust"}, "RSpec": {"Ruby"}, "Minitest": {"Ruby"}, "Test::Unit": {"Ruby"},
	"NUnit": {"C#"}, "xUnit": {"C#"}, "MSTest": {"C#"},
	"PHPUnit": {"PHP"}, "Pest": {"PHP"},
	"GoogleTest": {"C++", "C"}, "Catch2": {"C++"}, "doctest": {"C++"}, "Boost.Test": {"C++"},
	"cmocka": {"C"}, "Unity": {"C"}, "CUnit": {"C"},
	"XCTest": {"Swift"}, "Swift Testing": {"Swift"},
}

var viaRank = map[string]int{"config": 0, "dependency": 1, "script": 2, "import": 3, "syntax": 4}

func (inv *Inventory) frameworks() []TestFramework {
	out := make([]TestFramework, 0, len(inv.fws))
	for name, fw := range inv.fws {
		t := TestFramework{Name: name, TestFiles: fw.testFiles, Languages: []string{}}
		for l := range fw.langs {
			t.Languages = append(t.Languages, l)
		}
		if len(t.Languages) == 0 {
			home := frameworkLanguages[name]
			for _, l := range home {
				if inv.langSeen[l] {
					t.Languages = append(t.Languages, l)
				}
			}
			if len(t.Languages) == 0 && len(home) > 0 {
				t.Languages = append(t.Languages, home[0])
			}
		}
		slices.Sort(t.Languages)
		for k, e := range fw.evidence {
			t.Evidence = append(t.Evidence, Evidence{Via: k[0], Detail: k[1], Files: e.files, Count: e.count})
		}
		slices.SortFunc(t.Evidence, func(a, b Evidence) int {
			return cmp.Or(cmp.Compare(viaRank[a.Via], viaRank[b.Via]), strings.Compare(a.Detail, b.Detail))
		})
		t.Evidence = t.Evidence[:min(len(t.Evidence), maxEvidence)]
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b TestFramework) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// resolveClaims marks the packages each test file's claims name as
// covered by its directory.
func (inv *Inventory) resolveClaims() {
	dirs := map[string]map[string][]invKey{} // family → last element of the directory → packages with source
	jvm := map[string][]invKey{}             // JVM package → packages declaring it
	for k, p := range inv.pkgs {
		if p.SourceFiles == 0 {
			continue
		}
		if dirs[p.family] == nil {
			dirs[p.family] = map[string][]invKey{}
		}
		dirs[p.family][path.Base(k.dir)] = append(dirs[p.family][path.Base(k.dir)], k)
		for _, d := range p.declPkgs {
			jvm[d] = append(jvm[d], k)
		}
	}
	matchDirs := func(c invClaim, p string, suffix bool, out []invKey) []invKey {
		for _, k := range dirs[c.family][path.Base(p)] {
			if pathMatches(k.dir, p, suffix) {
				out = append(out, k)
			}
		}
		return out
	}
	matchFiles := func(c invClaim, p string, suffix bool, out []invKey) []invKey {
		for _, s := range inv.srcIndex[c.family][path.Base(p)] {
			if pathMatches(s.noExt, p, suffix) {
				out = append(out, s.key)
			}
		}
		return out
	}
	for c := range inv.claims {
		var targets []invKey
		switch c.mode {
		case claimDir:
			targets = matchDirs(c, c.path, false, nil)
		case claimExact, claimSuffix:
			targets = matchDirs(c, c.path, c.mode == claimSuffix, nil)
			targets = matchFiles(c, c.path, c.mode == claimSuffix, targets)
		case claimMirror:
			parts := strings.Split(c.path, "/")
			for i := range parts {
				if targets = matchFiles(c, strings.Join(parts[i:], "/"), true, nil); len(targets) > 0 {
					break
				}
			}
		case claimPackage:
			targets = jvm[c.path]
		}
		for _, k := range targets {
			if p := inv.pkgs[k]; k.dir != c.from && p.SourceFiles > 0 {
				if p.coveredBy == nil {
					p.coveredBy = map[string]bool{}
				}
				p.coveredBy[c.from] = true
			}
		}
	}
}

func pathMatches(s, p string, suffix bool) bool {
	return s == p || suffix && strings.HasSuffix(s, "/"+p)
}

// invConfigCode reports code files that configure rather than hold code.
func invConfigCode(p string) bool {
	base := path.Base(p)
	switch base {
	case "setup.py", "noxfile.py", "fabfile.py", "manage.py", "package-info.java", "module-info.java",
		"Gruntfile.js", "gulpfile.js", "karma.conf.js", ".eslintrc.js", ".eslintrc.cjs", ".prettierrc.js", ".mocharc.js", ".mocharc.cjs":
		return true
	}
	if strings.HasSuffix(base, ".d.ts") || strings.HasSuffix(base, ".d.mts") || strings.HasSuffix(base, ".d.cts") {
		return true
	}
	stem := strings.TrimSuffix(base, path.Ext(base))
	return strings.HasSuffix(stem, ".config") || strings.HasSuffix(stem, ".workspace")
}

var (
	generatedRe    = regexp.MustCompile(`(?i)(code generated .*do not edit|@generated\b|<auto-generated|generated by the protocol buffer compiler|autogenerated .*do not edit|this file (is|was) (automatically|auto-?)generated)`)
	generatedNames = regexp.MustCompile(`(_pb2(_grpc)?\.py|\.pb\.(h|cc|c)|\.min\.js|\.bundle\.js|\.generated\.\w+|\.designer\.cs|\.g\.cs)$`)
)

// invGenerated reports a generated file: by its name, or a marker in its
// first 30 lines.
func invGenerated(f *File) bool {
	if generatedNames.MatchString(f.Path) {
		return true
	}
	head := f.Data
	for i, n := 0, 0; i < len(head); i++ {
		if head[i] == '\n' {
			if n++; n == 30 {
				head = head[:i]
				break
			}
		}
	}
	head = head[:min(len(head), 4096)]
	// Every marker generatedRe matches holds "generated", in any case
	// (none of its letters has a case outside ASCII): most files have none.
	return containsFoldASCII(head, "generated") && generatedRe.Match(head)
}

// containsFoldASCII reports whether data holds lower (lower-case ASCII
// letters) in any case.
func containsFoldASCII(data []byte, lower string) bool {
	for i := 0; i+len(lower) <= len(data); i++ {
		j := 0
		for j < len(lower) && data[i+j]|0x20 == lower[j] {
			j++
		}
		if j == len(lower) {
			return true
		}
	}
	return false
}

// eachLine calls fn for each line of data, without its end.
func eachLine(data []byte, fn func(line string)) {
	for len(data) > 0 {
		line, rest, _ := bytes.Cut(data, []byte("\n"))
		fn(strings.TrimSuffix(string(line), "\r"))
		data = rest
	}
}

// hasDirPart reports whether a directory of p (not its base name) is one
// of names.
func hasDirPart(p string, names ...string) bool {
	parts := strings.Split(p, "/")
	for _, part := range parts[:len(parts)-1] {
		if slices.Contains(names, part) {
			return true
		}
	}
	return false
}

// mirrorPath is the path a test file's subject would have: the test's
// path without the test-root directories named roots, its base name
// replaced by subject.
func mirrorPath(p, subject string, roots ...string) string {
	if subject == "" {
		return ""
	}
	parts := strings.Split(path.Dir(p), "/")
	var keep []string
	for _, part := range parts {
		if part != "." && !slices.Contains(roots, part) {
			keep = append(keep, part)
		}
	}
	return path.Join(append(keep, subject)...)
}

var invScanners = map[string]func(*File, *invFile){
	"python": scanPython, "js": scanJS, "jvm": scanJVM, "rust": scanRust, "ruby": scanRuby,
	"csharp": scanCSharp, "php": scanPHP, "c": scanC, "swift": scanSwift,
}

// --- Go ---

// goFrameworks maps module and import paths to frameworks.
var goFrameworks = []struct{ prefix, fw string }{
	{"testing", "Go testing"},
	{"github.com/stretchr/testify", "testify"},
	{"github.com/golang/mock", "gomock"},
	{"go.uber.org/mock", "gomock"},
	{"github.com/onsi/ginkgo", "Ginkgo"},
	{"github.com/onsi/gomega", "Gomega"},
	{"github.com/frankban/quicktest", "quicktest"},
	{"gotest.tools", "gotest.tools"},
	{"github.com/smartystreets/goconvey", "GoConvey"},
	{"github.com/matryer/is", "is"},
}

func goFramework(p string) string {
	for _, g := range goFrameworks {
		if p == g.prefix || strings.HasPrefix(p, g.prefix+"/") {
			return g.fw
		}
	}
	return ""
}

var (
	goTestFuncRe   = regexp.MustCompile(`^func\s+(Test|Benchmark|Fuzz|Example)(\w*)\s*\(`)
	ginkgoTestRe   = regexp.MustCompile(`\b(It|Specify|Entry|FIt|PIt|XIt|FEntry|PEntry|XEntry)\(`)
	ginkgoSuiteRe  = regexp.MustCompile(`\b(Describe|Context|When|DescribeTable|FDescribe|PDescribe|XDescribe)\(`)
	goGeneratedRe  = regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)
	goParseOptions = parser.ParseComments | parser.SkipObjectResolution
)

// scanGo reads a Go file: a test file's tests (by Go's rules: a TestXxx
// whose Xxx does not start with a lower-case letter), a source file's
// package and exported functions. It reports a generated file.
func scanGo(f *File, fi *invFile) (generated bool) {
	fi.test = strings.HasSuffix(f.Path, "_test.go")
	fset := token.NewFileSet()
	file, _ := parser.ParseFile(fset, f.Path, f.Data, goParseOptions)
	if file == nil || file.Name == nil {
		if goGeneratedRe.Match(f.Data) {
			return true
		}
		if fi.test {
			eachLine(f.Data, func(line string) {
				if m := goTestFuncRe.FindStringSubmatch(line); m != nil {
					goCount(&fi.counts, m[1]+m[2], 0)
				}
			})
		}
		return false
	}
	if ast.IsGenerated(file) {
		return true
	}
	if !fi.test {
		fi.goPkg = file.Name.Name
	}
	ginkgo := false
	for _, imp := range file.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		if fw := goFramework(p); fw != "" {
			fi.use(fw, "import", p)
			ginkgo = ginkgo || fw == "Ginkgo"
		}
	}
	for _, d := range file.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if fi.test {
			if fd.Recv == nil {
				goCount(&fi.counts, fd.Name.Name, goRuns(fd))
			}
			continue
		}
		if name, ok := goExported(fd); ok {
			fi.exported = append(fi.exported, Symbol{Name: name, File: f.Path, Line: fset.Position(fd.Pos()).Line})
		}
	}
	if fi.test && ginkgo {
		eachLine(f.Data, func(line string) {
			for _, m := range ginkgoTestRe.FindAllStringSubmatch(line, -1) {
				fi.counts.Tests++
				if m[1][0] == 'P' || m[1][0] == 'X' {
					fi.counts.Disabled++
				}
				if strings.HasSuffix(m[1], "Entry") {
					fi.counts.Parameterized++
				}
			}
			fi.counts.Suites += len(ginkgoSuiteRe.FindAllString(line, -1))
		})
	}
	return false
}

// goCount counts a top-level function of a test file.
func goCount(c *TestCounts, name string, runs int) {
	switch {
	case name == "TestMain":
	case goTestName(name, "Test"):
		c.Tests++
		c.Subtests += runs
	case goTestName(name, "Benchmark"):
		c.Benchmarks++
	case goTestName(name, "Fuzz"):
		c.Fuzz++
	case goTestName(name, "Example"):
		c.Examples++
	}
}

func goTestName(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	if len(name) == len(prefix) {
		return true
	}
	r, _ := utf8.DecodeRuneInString(name[len(prefix):])
	return !unicode.IsLower(r)
}

// goRuns counts the t.Run call sites of a test function, t being its
// parameter (or a closure's of the same name).
func goRuns(fd *ast.FuncDecl) int {
	if fd.Body == nil || fd.Type.Params == nil || len(fd.Type.Params.List) == 0 || len(fd.Type.Params.List[0].Names) == 0 {
		return 0
	}
	t := fd.Type.Params.List[0].Names[0].Name
	n := 0
	ast.Inspect(fd.Body, func(node ast.Node) bool {
		if call, ok := node.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == t {
					n++
				}
			}
		}
		return true
	})
	return n
}

// goExported names an exported function, or a method of an exported type.
func goExported(fd *ast.FuncDecl) (string, bool) {
	if !fd.Name.IsExported() {
		return "", false
	}
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name, true
	}
	t := fd.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr:
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.ParenExpr:
			t = x.X
			continue
		case *ast.Ident:
			if !x.IsExported() {
				return "", false
			}
			return x.Name + "." + fd.Name.Name, true
		}
		return "", false
	}
}

// --- Python ---

var (
	pyDefRe      = regexp.MustCompile(`^(\s*)(?:async\s+)?def\s+(\w+)`)
	pyClassRe    = regexp.MustCompile(`^(\s*)class\s+(\w+)(.*)`)
	pyImportRe   = regexp.MustCompile(`^\s*import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)`)
	pyFromRe     = regexp.MustCompile(`^\s*from\s+(\.*)([\w.]*)\s+import\s+\(?\s*([\w\s,]*)`)
	pyParamRe    = regexp.MustCompile(`^@(pytest\.mark\.parametrize|parameterized|given\b|pytest\.fixture\(params)`)
	pySkipRe     = regexp.MustCompile(`^@(pytest\.mark\.skip|unittest\.skip|skip\b|skipIf|skipUnless|pytest\.mark\.xfail\(.*run\s*=\s*False)`)
	pyTestSubjRe = regexp.MustCompile(`^(?:test_(\w+)|(\w+)_test)\.py$`)
)

var pyFrameworks = map[string]string{"pytest": "pytest", "unittest": "unittest", "hypothesis": "Hypothesis", "nose": "nose", "nose2": "nose"}

type pyScope struct {
	indent int
	class  bool
	test   bool // a test class
}

// scanPython counts pytest- and unittest-collected tests: module-level
// test* functions, and test* methods of Test* classes and TestCase
// subclasses.
func scanPython(f *File, fi *invFile) {
	base := path.Base(f.Path)
	pathTest := base == "conftest.py" || pyTestSubjRe.MatchString(base) || hasDirPart(f.Path, "tests", "test")
	var (
		stack      []pyScope
		decorators []string
		inString   string
		c          TestCounts
		imports    []string
		frameworks = map[string]bool{}
		// Top-level functions and classes: tests (test*, Test* or
		// TestCase subclasses) and others.
		topTests, topOthers int
	)
	eachLine(f.Data, func(line string) {
		if inString != "" {
			if strings.Contains(line, inString) {
				inString = ""
			}
			return
		}
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || trimmed[0] == '#' {
			return
		}
		for _, q := range []string{`"""`, `'''`} {
			if strings.Count(line, q)%2 == 1 {
				inString = q
			}
		}
		indent := len(line) - len(strings.TrimLeft(line, " \t"))
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		if trimmed[0] == '@' {
			decorators = append(decorators, trimmed)
			return
		}
		if m := pyDefRe.FindStringSubmatch(line); m != nil {
			top := len(stack) == 0
			inTestClass := len(stack) > 0 && stack[len(stack)-1].class && stack[len(stack)-1].test
			switch {
			case top && strings.HasPrefix(m[2], "test"):
				topTests++
			case top:
				topOthers++
			}
			if strings.HasPrefix(m[2], "test") && (top || inTestClass) {
				c.Tests++
				for _, d := range decorators {
					if pyParamRe.MatchString(d) {
						c.Parameterized++
						break
					}
				}
				for _, d := range decorators {
					if pySkipRe.MatchString(d) {
						c.Disabled++
						break
					}
				}
			}
			stack = append(stack, pyScope{indent: indent})
			decorators = nil
			return
		}
		if m := pyClassRe.FindStringSubmatch(line); m != nil {
			inFunc := slices.ContainsFunc(stack, func(s pyScope) bool { return !s.class })
			test := !inFunc && (strings.HasPrefix(m[2], "Test") || strings.Contains(m[3], "TestCase"))
			if test {
				c.Suites++
			}
			switch {
			case len(stack) == 0 && test:
				topTests++
			case len(stack) == 0:
				topOthers++
			}
			stack = append(stack, pyScope{indent: indent, class: true, test: test})
			decorators = nil
			return
		}
		decorators = nil
		if m := pyImportRe.FindStringSubmatch(line); m != nil {
			for _, name := range strings.Split(m[1], ",") {
				name, _, _ = strings.Cut(strings.TrimSpace(name), " ")
				imports = append(imports, name)
				if fw := pyFrameworks[strings.Split(name, ".")[0]]; fw != "" && !frameworks[fw] {
					frameworks[fw] = true
					fi.use(fw, "import", name)
				}
			}
			return
		}
		if m := pyFromRe.FindStringSubmatch(line); m != nil {
			mod := m[2]
			if fw := pyFrameworks[strings.Split(mod, ".")[0]]; m[1] == "" && fw != "" && !frameworks[fw] {
				frameworks[fw] = true
				fi.use(fw, "import", mod)
			}
			if m[1] != "" {
				// A relative import: from its directory, up one per dot
				// past the first.
				dir := fi.dir
				for range len(m[1]) - 1 {
					dir = path.Dir(dir)
				}
				if mod != "" {
					dir = path.Join(dir, strings.ReplaceAll(mod, ".", "/"))
				}
				fi.claim(claimExact, path.Clean(dir))
				for _, name := range strings.Split(m[3], ",") {
					if fields := strings.Fields(name); len(fields) > 0 && fields[0] != "*" {
						fi.claim(claimExact, path.Join(dir, fields[0]))
					}
				}
				return
			}
			imports = append(imports, mod)
			for _, name := range strings.Split(m[3], ",") {
				if fields := strings.Fields(name); len(fields) > 0 && fields[0] != "*" {
					imports = append(imports, mod+"."+fields[0])
				}
			}
		}
	})
	// Outside test paths, a file of mostly tests that imports a framework
	// (not a library that subclasses TestCase, as doctest.py does).
	fi.test = pathTest || (c.Tests > 0 && topTests >= topOthers && (frameworks["pytest"] || frameworks["unittest"]))
	if !fi.test {
		fi.uses = fi.uses[:0]
		return
	}
	fi.counts = c
	for _, imp := range imports {
		if imp != "" && pyFrameworks[strings.Split(imp, ".")[0]] == "" {
			fi.claim(claimSuffix, strings.ReplaceAll(imp, ".", "/"))
		}
	}
	if m := pyTestSubjRe.FindStringSubmatch(base); m != nil {
		fi.claim(claimMirror, mirrorPath(f.Path, m[1]+m[2], "tests", "test"))
	}
}

// --- JavaScript and TypeScript ---

var (
	jsTestRe    = regexp.MustCompile("(?:^|[^\\w.$])([xf]?)(it|test|specify)((?:\\.(?:only|skip|todo|concurrent|failing|fails|sequential|each|skipIf\\([^)]*\\)|runIf\\([^)]*\\)))*)\\s*[(`]")
	jsSuiteRe   = regexp.MustCompile("(?:^|[^\\w.$])([xf]?)(describe|context|suite|test\\.describe)((?:\\.(?:only|skip|todo|concurrent|sequential|shuffle|each|parallel|serial))*)\\s*[(`]")
	jsImportRe  = regexp.MustCompile(`(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*|\b(?:jest|vi)\.mock\s*\(\s*)['"]([^'"]+)['"]`)
	jsSyntaxRe  = regexp.MustCompile(`\b(jest|vi|jasmine|cy)\.(\w+)`)
	jsTestName  = regexp.MustCompile(`^(.+?)[._-](test|spec|cy|e2e|e2e-spec)\.[cm]?[jt]sx?$`)
	jsCodeExtRe = regexp.MustCompile(`\.[cm]?[jt]sx?$`)
)

var jsImportFrameworks = map[string]string{
	"vitest": "Vitest", "@jest/globals": "Jest", "mocha": "Mocha", "node:test": "node:test", "ava": "AVA",
	"tape": "tape", "@playwright/test": "Playwright", "cypress": "Cypress", "jasmine": "Jasmine",
}

var jsSyntaxFrameworks = map[string]string{"jest": "Jest", "vi": "Vitest", "jasmine": "Jasmine", "cy": "Cypress"}

// jsTestRoots are directories whose files are tests.
var jsTestRoots = []string{"__tests__", "__mocks__", "test", "tests", "spec", "e2e", "cypress"}

// scanJS counts it()/test() calls (x-, f-, .only, .skip, .each forms) and
// describe()/context()/suite() blocks.
func scanJS(f *File, fi *invFile) {
	base := path.Base(f.Path)
	nameMatch := jsTestName.FindStringSubmatch(base)
	pathTest := nameMatch != nil || hasDirPart(f.Path, jsTestRoots...)
	var (
		c          TestCounts
		specs      []string
		inComment  bool
		frameworks = map[string]bool{}
		testOnly   bool // imports a framework only tests import
	)
	eachLine(f.Data, func(line string) {
		if inComment {
			end := strings.Index(line, "*/")
			if end < 0 {
				return
			}
			line, inComment = line[end+2:], false
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "//") {
			return
		}
		if i := strings.Index(line, "/*"); i >= 0 && !strings.Contains(line[i:], "*/") {
			line, inComment = line[:i], true
		}
		// Each regexp runs only on the lines that hold a literal every
		// match of it holds (jsMay): the regexps have no literal prefix
		// to find their matches by, and most lines have none.
		may := jsMay(line)
		for _, m := range may.matches(jsMayImport, jsImportRe, line) {
			spec := m[1]
			specs = append(specs, spec)
			if fw := jsImportFrameworks[spec]; fw != "" && !frameworks[fw] {
				frameworks[fw] = true
				testOnly = testOnly || fw != "Jasmine"
				fi.use(fw, "import", spec)
			}
		}
		for _, m := range may.matches(jsMaySyntax, jsSyntaxRe, line) {
			fw := jsSyntaxFrameworks[m[1]]
			if !frameworks[fw+"|syntax"] && (m[1] != "cy" || strings.Contains(base, ".cy.") || hasDirPart(f.Path, "cypress")) {
				frameworks[fw+"|syntax"] = true
				fi.use(fw, "syntax", m[1]+"."+m[2])
			}
		}
		for _, m := range may.matches(jsMayTest, jsTestRe, line) {
			c.Tests++
			if m[1] == "x" || strings.Contains(m[3], ".skip") || strings.Contains(m[3], ".todo") {
				c.Disabled++
			}
			if strings.Contains(m[3], ".each") {
				c.Parameterized++
			}
		}
		if may&jsMaySuite != 0 {
			c.Suites += len(jsSuiteRe.FindAllString(line, -1))
		}
	})
	fi.test = pathTest || (testOnly && c.Tests > 0)
	if !fi.test {
		// Imports in source files are evidence of nothing.
		fi.uses = fi.uses[:0]
		return
	}
	fi.counts = c
	for _, spec := range specs {
		if strings.HasPrefix(spec, "./") || strings.HasPrefix(spec, "../") {
			p := path.Join(fi.dir, jsCodeExtRe.ReplaceAllString(spec, ""))
			fi.claim(claimExact, strings.TrimSuffix(p, "/index"))
		}
	}
	subject := ""
	if nameMatch != nil {
		subject = nameMatch[1]
	} else if hasDirPart(f.Path, "__tests__") {
		subject = jsCodeExtRe.ReplaceAllString(base, "")
	}
	fi.claim(claimMirror, mirrorPath(f.Path, subject, jsTestRoots...))
}

// jsMaySet says which of scanJS's regexps a line may match.
type jsMaySet uint8

const (
	jsMayImport jsMaySet = 1 << iota // jsImportRe: from, import, require or mock
	jsMaySyntax                      // jsSyntaxRe: "jest.", "vi.", "jasmine." or "cy."
	jsMayTest                        // jsTestRe: it, test or specify, and "(" or "`"
	jsMaySuite                       // jsSuiteRe: describe, context or suite, and "(" or "`"
)

// jsMay returns the regexps line may match: those whose literals (every
// match of the regexp holds one of them) it holds.
func jsMay(line string) jsMaySet {
	var may jsMaySet
	has := func(subs ...string) bool {
		for _, sub := range subs {
			if strings.Contains(line, sub) {
				return true
			}
		}
		return false
	}
	if has("from", "import", "require", "mock") {
		may |= jsMayImport
	}
	if has("jest.", "vi.", "jasmine.", "cy.") {
		may |= jsMaySyntax
	}
	if strings.ContainsAny(line, "(`") {
		if has("it", "test", "specify") {
			may |= jsMayTest
		}
		if has("describe", "context", "suite") {
			may |= jsMaySuite
		}
	}
	return may
}

// matches is re's submatches in line, none when may does not hold which.
func (may jsMaySet) matches(which jsMaySet, re *regexp.Regexp, line string) [][]string {
	if may&which == 0 {
		return nil
	}
	return re.FindAllStringSubmatch(line, -1)
}

// --- Java, Kotlin, Scala ---

var (
	jvmTestRe      = regexp.MustCompile(`@(?:org\.junit\.(?:jupiter\.api\.|jupiter\.params\.)?|org\.testng\.annotations\.|kotlin\.test\.)?(Test|ParameterizedTest|RepeatedTest|TestFactory|TestTemplate)\b`)
	jvmDisabledRe  = regexp.MustCompile(`@(?:org\.junit\.(?:jupiter\.api\.)?)?(Disabled|Ignore)\b`)
	jvmNestedRe    = regexp.MustCompile(`@Nested\b`)
	junit3Re       = regexp.MustCompile(`^\s*public\s+void\s+test\w*\s*\(`)
	jvmPackageRe   = regexp.MustCompile(`^\s*package\s+([\w.]+)`)
	jvmImportRe    = regexp.MustCompile(`^\s*import\s+(?:static\s+)?([\w.]+)`)
	scalaTestRe    = regexp.MustCompile(`(?:^|[^\w.])(test|it|ignore)\s*\(\s*"|"\s+in\s*\{`)
	jvmTestNameRe  = regexp.MustCompile(`^(?:Test(\w+)|(\w+?)(?:Test|Tests|IT|TestCase|Spec|Suite))\.(java|kt|scala)$`)
	jvmTestRoots   = []string{"test", "tests", "androidTest", "testFixtures", "integrationTest", "it"}
	jvmFrameworkOf = []struct{ prefix, fw string }{
		{"org.junit.jupiter", "JUnit 5"},
		{"org.junit", "JUnit 4"},
		{"junit.framework", "JUnit 3"},
		{"org.testng", "TestNG"},
		{"org.mockito", "Mockito"},
		{"kotlin.test", "kotlin.test"},
		{"io.kotest", "Kotest"},
		{"org.scalatest", "ScalaTest"},
		{"munit", "MUnit"},
	}
)

// scanJVM counts @Test-style annotated methods (JUnit 4 and 5, TestNG,
// kotlin.test), JUnit 3 test* methods and ScalaTest/MUnit test("...")
// cases; a test class is a suite.
func scanJVM(f *File, fi *invFile) {
	base := path.Base(f.Path)
	nameMatch := jvmTestNameRe.FindStringSubmatch(base)
	inMain := strings.HasPrefix(f.Path, "src/main/") || strings.Contains(f.Path, "/src/main/")
	pathTest := !inMain && (nameMatch != nil || hasDirPart(f.Path, jvmTestRoots...))
	var (
		c          TestCounts
		frameworks = map[string]bool{}
		junit3     = false
	)
	eachLine(f.Data, func(line string) {
		if fi.declPkg == "" {
			if m := jvmPackageRe.FindStringSubmatch(line); m != nil {
				fi.declPkg = m[1]
				return
			}
		}
		if m := jvmImportRe.FindStringSubmatch(line); m != nil {
			for _, j := range jvmFrameworkOf {
				if m[1] == j.prefix || strings.HasPrefix(m[1], j.prefix+".") {
					if !frameworks[j.fw] {
						frameworks[j.fw] = true
						fi.use(j.fw, "import", j.prefix)
					}
					break
				}
			}
			return
		}
		if strings.Contains(line, "extends TestCase") {
			junit3 = true
		}
		for _, m := range jvmTestRe.FindAllStringSubmatch(line, -1) {
			c.Tests++
			if m[1] == "ParameterizedTest" {
				c.Parameterized++
			}
		}
		c.Disabled += len(jvmDisabledRe.FindAllString(line, -1))
		c.Suites += len(jvmNestedRe.FindAllString(line, -1))
		if junit3 && junit3Re.MatchString(line) {
			c.Tests++
		}
		if fi.lang == "Scala" {
			for _, m := range scalaTestRe.FindAllStringSubmatch(line, -1) {
				c.Tests++
				if m[1] == "ignore" {
					c.Disabled++
				}
			}
		}
	})
	if c.Tests > 0 {
		c.Suites++
	}
	fi.test = pathTest || (c.Tests > 0 && len(frameworks) > 0)
	if !fi.test {
		fi.uses = fi.uses[:0]
		return
	}
	fi.counts = c
	if nameMatch != nil && !inMain {
		fi.claim(claimMirror, mirrorPath(f.Path, nameMatch[1]+nameMatch[2], jvmTestRoots...))
	}
}

// --- Rust ---

var (
	rustTestRe    = regexp.MustCompile(`#\[\s*(test|tokio::test|async_std::test|actix_rt::test|actix_web::test|rstest|test_case|wasm_bindgen_test|test_log::test)\b`)
	rustBenchRe   = regexp.MustCompile(`#\[\s*bench\s*\]`)
	rustIgnoreRe  = regexp.MustCompile(`#\[\s*ignore\b`)
	rustCfgTestRe = regexp.MustCompile(`#\[\s*cfg\s*\(\s*test\s*\)\s*\]`)
	rustUseRe     = regexp.MustCompile(`^\s*(?:use|extern\s+crate)\s+(proptest|criterion|quickcheck|mockall|insta|rstest)\b`)
)

var rustAttrFrameworks = map[string]string{
	"test": "Rust #[test]", "tokio::test": "tokio::test", "async_std::test": "async-std test",
	"actix_rt::test": "Rust #[test]", "actix_web::test": "Rust #[test]", "rstest": "rstest",
	"test_case": "test-case", "wasm_bindgen_test": "wasm-bindgen-test", "test_log::test": "Rust #[test]",
}

var rustCrateFrameworks = map[string]string{
	"proptest": "proptest", "criterion": "Criterion", "quickcheck": "quickcheck", "mockall": "mockall",
	"insta": "insta", "rstest": "rstest", "test-case": "test-case", "wasm-bindgen-test": "wasm-bindgen-test",
}

// scanRust counts #[test]-like attributes in every Rust file: a file in
// a crate's tests/ is a test file, any other with tests holds inline ones
// (each #[cfg(test)] module a suite).
func scanRust(f *File, fi *invFile) {
	var c TestCounts
	seen := map[string]bool{}
	eachLine(f.Data, func(line string) {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "//") {
			return
		}
		for _, m := range rustTestRe.FindAllStringSubmatch(line, -1) {
			c.Tests++
			if m[1] == "test_case" || m[1] == "rstest" {
				c.Parameterized++
			}
			if fw := rustAttrFrameworks[m[1]]; !seen[fw] {
				seen[fw] = true
				fi.use(fw, "syntax", "#["+m[1]+"]")
			}
		}
		c.Benchmarks += len(rustBenchRe.FindAllString(line, -1))
		c.Disabled += len(rustIgnoreRe.FindAllString(line, -1))
		c.Suites += len(rustCfgTestRe.FindAllString(line, -1))
		if m := rustUseRe.FindStringSubmatch(line); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			fi.use(rustCrateFrameworks[m[1]], "import", m[1])
		}
		if strings.Contains(line, "proptest!") && !seen["proptest"] {
			seen["proptest"] = true
			fi.use("proptest", "syntax", "proptest!")
		}
	})
	fi.counts = c
	parts := strings.Split(f.Path, "/")
	for i := len(parts) - 2; i >= 0; i-- {
		if parts[i] == "tests" {
			fi.test = true
			fi.claim(claimDir, path.Join(append(parts[:i:i], "src")...))
			return
		}
	}
}

// --- Ruby ---

var (
	rbTestRe     = regexp.MustCompile(`^\s*(x?)(it|specify|example|scenario|its|test)(?:\s*\(|\s+['"{:]|\s+do\b|\s*\{|\s*$)`)
	rbDefTestRe  = regexp.MustCompile(`^\s*def\s+test_\w+`)
	rbPendingRe  = regexp.MustCompile(`^\s*(pending|skip)\b`)
	rbSuiteRe    = regexp.MustCompile(`^\s*(?:RSpec\.)?(describe|context|feature|xdescribe|xcontext)\b|^\s*class\s+\w+\s*<\s*(Minitest::Test|Minitest::Spec|ActiveSupport::TestCase|ActionDispatch::IntegrationTest|ActionController::TestCase|ActionView::TestCase|ActiveJob::TestCase|ApplicationSystemTestCase|Test::Unit::TestCase)\b`)
	rbRequireRe  = regexp.MustCompile(`^\s*require(_relative)?\s*\(?\s*['"]([^'"]+)['"]`)
	rbTestNameRe = regexp.MustCompile(`^(?:test_(\w+)|(\w+?)_(?:spec|test))\.rb$`)
)

// scanRuby counts RSpec and minitest/spec examples (it, specify, test
// "..." do) and Minitest/Test::Unit test_* methods.
func scanRuby(f *File, fi *invFile) {
	base := path.Base(f.Path)
	nameMatch := rbTestNameRe.FindStringSubmatch(base)
	pathTest := nameMatch != nil || hasDirPart(f.Path, "spec", "test")
	var (
		c          TestCounts
		frameworks = map[string]bool{}
		requires   [][2]string
	)
	use := func(fw, via, detail string) {
		if !frameworks[fw+"|"+via] {
			frameworks[fw+"|"+via] = true
			fi.use(fw, via, detail)
		}
	}
	eachLine(f.Data, func(line string) {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			return
		}
		if m := rbRequireRe.FindStringSubmatch(line); m != nil {
			switch lib := m[2]; {
			case m[1] == "" && (strings.HasPrefix(lib, "rspec") || lib == "spec_helper" || lib == "rails_helper"):
				use("RSpec", "import", lib)
			case m[1] == "" && strings.HasPrefix(lib, "minitest"):
				use("Minitest", "import", lib)
			case m[1] == "" && lib == "test/unit":
				use("Test::Unit", "import", lib)
			default:
				requires = append(requires, [2]string{m[1], lib})
			}
			return
		}
		switch {
		case strings.Contains(line, "RSpec."):
			use("RSpec", "syntax", "RSpec.")
		case strings.Contains(line, "Minitest::") || strings.Contains(line, "ActiveSupport::TestCase"):
			use("Minitest", "syntax", "Minitest::Test")
		case strings.Contains(line, "Test::Unit::"):
			use("Test::Unit", "syntax", "Test::Unit::TestCase")
		}
		if m := rbTestRe.FindStringSubmatch(line); m != nil {
			c.Tests++
			if m[1] == "x" {
				c.Disabled++
			}
		} else if rbDefTestRe.MatchString(line) {
			c.Tests++
		} else if rbPendingRe.MatchString(line) {
			c.Disabled++
		}
		if rbSuiteRe.MatchString(line) {
			c.Suites++
		}
	})
	fi.test = pathTest
	if !fi.test {
		fi.uses = fi.uses[:0]
		return
	}
	fi.counts = c
	for _, r := range requires {
		lib := strings.TrimSuffix(r[1], ".rb")
		if r[0] != "" {
			fi.claim(claimExact, path.Join(fi.dir, lib))
		} else {
			fi.claim(claimSuffix, lib)
		}
	}
	if nameMatch != nil {
		fi.claim(claimMirror, mirrorPath(f.Path, nameMatch[1]+nameMatch[2], "spec", "test"))
	}
}

// --- C# ---

var (
	csTestAttrRe  = regexp.MustCompile(`\b(Test|Fact|Theory|TestMethod|DataTestMethod|TestCase|TestCaseSource|DataRow|InlineData|Ignore|Skip)\b`)
	csUsingRe     = regexp.MustCompile(`^\s*using\s+(NUnit\.Framework|Xunit|Microsoft\.VisualStudio\.TestTools\.UnitTesting)\b`)
	csTestNameRe  = regexp.MustCompile(`^(\w+?)Tests?\.cs$`)
	csFrameworkOf = map[string]string{"NUnit.Framework": "NUnit", "Xunit": "xUnit", "Microsoft.VisualStudio.TestTools.UnitTesting": "MSTest"}
)

// scanCSharp counts test methods by their attributes ([Test], [Fact],
// [Theory], [TestMethod], or [TestCase]s alone), one per attribute group.
func scanCSharp(f *File, fi *invFile) {
	base := path.Base(f.Path)
	nameMatch := csTestNameRe.FindStringSubmatch(base)
	pathTest := nameMatch != nil || slices.ContainsFunc(strings.Split(path.Dir(f.Path), "/"), func(d string) bool {
		return d == "test" || d == "tests" || strings.HasSuffix(d, "Tests") || strings.HasSuffix(d, ".Test")
	})
	var c TestCounts
	var group []string
	flush := func() {
		attrs := map[string]bool{}
		for _, g := range group {
			for _, m := range csTestAttrRe.FindAllStringSubmatch(g, -1) {
				attrs[m[1]] = true
			}
		}
		group = group[:0]
		if !(attrs["Test"] || attrs["Fact"] || attrs["Theory"] || attrs["TestMethod"] || attrs["DataTestMethod"] || attrs["TestCase"] || attrs["TestCaseSource"]) {
			return
		}
		c.Tests++
		if attrs["Theory"] || attrs["DataTestMethod"] || attrs["TestCase"] || attrs["TestCaseSource"] || attrs["DataRow"] || attrs["InlineData"] {
			c.Parameterized++
		}
		if attrs["Ignore"] || attrs["Skip"] {
			c.Disabled++
		}
	}
	seen := map[string]bool{}
	eachLine(f.Data, func(line string) {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[") {
			group = append(group, t)
			if strings.HasPrefix(t, "[TestFixture") || strings.HasPrefix(t, "[TestClass") {
				c.Suites++
			}
			return
		}
		if len(group) > 0 && t != "" && !strings.HasPrefix(t, "//") {
			flush()
		}
		if m := csUsingRe.FindStringSubmatch(line); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			fi.use(csFrameworkOf[m[1]], "import", m[1])
		}
	})
	flush()
	fi.test = pathTest || (c.Tests > 0 && len(seen) > 0)
	if !fi.test {
		fi.uses = fi.uses[:0]
		return
	}
	if c.Tests > 0 && c.Suites == 0 {
		c.Suites = 1
	}
	fi.counts = c
	if nameMatch != nil {
		fi.claim(claimMirror, mirrorPath(f.Path, nameMatch[1], "test", "tests"))
	}
}

// --- PHP ---

var (
	phpTestFnRe   = regexp.MustCompile(`^\s*(?:public\s+)?(?:static\s+)?function\s+test\w*\s*\(`)
	phpTestAttrRe = regexp.MustCompile(`#\[\s*(?:\\?PHPUnit\\Framework\\Attributes\\)?Test\s*\]|@test\b`)
	phpParamRe    = regexp.MustCompile(`@dataProvider\b|#\[\s*(?:\\?PHPUnit\\Framework\\Attributes\\)?DataProvider\b`)
	phpSkipRe     = regexp.MustCompile(`markTestSkipped|markTestIncomplete|->skip\(`)
	phpClassRe    = regexp.MustCompile(`^\s*(?:final\s+|abstract\s+)*class\s+\w+\s+extends\s+\\?(?:[\w\\]*\\)?TestCase\b`)
	pestTestRe    = regexp.MustCompile(`^\s*(test|it)\s*\(\s*['"]`)
	phpTestNameRe = regexp.MustCompile(`^(\w+?)Test\.php$`)
)

// scanPHP counts PHPUnit test* methods and #[Test]/@test methods, and
// Pest test()/it() cases.
func scanPHP(f *File, fi *invFile) {
	base := path.Base(f.Path)
	nameMatch := phpTestNameRe.FindStringSubmatch(base)
	pathTest := nameMatch != nil || hasDirPart(f.Path, "tests", "test")
	var c TestCounts
	phpunit, pest := false, false
	eachLine(f.Data, func(line string) {
		if strings.Contains(line, `PHPUnit\Framework`) || phpClassRe.MatchString(line) {
			if !phpunit {
				phpunit = true
				fi.use("PHPUnit", "import", `PHPUnit\Framework\TestCase`)
			}
		}
		if phpClassRe.MatchString(line) {
			c.Suites++
		}
		if phpTestFnRe.MatchString(line) {
			c.Tests++
		}
		c.Tests += len(phpTestAttrRe.FindAllString(line, -1))
		c.Parameterized += len(phpParamRe.FindAllString(line, -1))
		c.Disabled += len(phpSkipRe.FindAllString(line, -1))
		if pestTestRe.MatchString(line) {
			c.Tests++
			if !pest {
				pest = true
				fi.use("Pest", "syntax", "test()/it()")
			}
		}
	})
	fi.test = pathTest || (phpunit && c.Tests > 0)
	if !fi.test {
		fi.uses = fi.uses[:0]
		return
	}
	fi.counts = c
	if nameMatch != nil {
		fi.claim(claimMirror, mirrorPath(f.Path, nameMatch[1], "tests", "test"))
	}
}

// --- C and C++ ---

var (
	cTestRe     = regexp.MustCompile(`^\s*(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|TEST_CASE|TEST_CASE_METHOD|SCENARIO|TEMPLATE_TEST_CASE|BOOST_AUTO_TEST_CASE|BOOST_FIXTURE_TEST_CASE|BOOST_DATA_TEST_CASE)\s*\(\s*(\w*)\s*,?\s*(\w*)`)
	cCallTestRe = regexp.MustCompile(`\b(cmocka_unit_test\w*|RUN_TEST|CU_add_test)\s*\(`)
	cSuiteRe    = regexp.MustCompile(`^\s*(BOOST_AUTO_TEST_SUITE|BOOST_FIXTURE_TEST_SUITE|TEST_SUITE)\s*\(`)
	cSectionRe  = regexp.MustCompile(`^\s*(SECTION|SUBCASE)\s*\(`)
	cIncludeRe  = regexp.MustCompile(`^\s*#\s*include\s*[<"]([^>"]+)[>"]`)
	cTestNameRe = regexp.MustCompile(`^(?:test_(\w+)|(\w+?)_(?:test|tests|unittest))\.\w+$`)
	cIncludes   = []struct{ prefix, fw string }{
		{"gtest/", "GoogleTest"}, {"gmock/", "GoogleTest"}, {"catch2/", "Catch2"}, {"catch.hpp", "Catch2"},
		{"doctest", "doctest"}, {"boost/test/", "Boost.Test"}, {"cmocka.h", "cmocka"}, {"unity.h", "Unity"}, {"CUnit/", "CUnit"},
	}
)

// scanC counts GoogleTest, Catch2, doctest and Boost.Test test macros and
// cmocka/Unity/CUnit registrations.
func scanC(f *File, fi *invFile) {
	base := path.Base(f.Path)
	nameMatch := cTestNameRe.FindStringSubmatch(base)
	pathTest := nameMatch != nil || hasDirPart(f.Path, "test", "tests", "unittest", "unittests")
	var c TestCounts
	seen := map[string]bool{}
	eachLine(f.Data, func(line string) {
		if m := cIncludeRe.FindStringSubmatch(line); m != nil {
			for _, inc := range cIncludes {
				if strings.HasPrefix(m[1], inc.prefix) && !seen[inc.fw] {
					seen[inc.fw] = true
					fi.use(inc.fw, "import", "#include <"+m[1]+">")
				}
			}
			return
		}
		if m := cTestRe.FindStringSubmatch(line); m != nil {
			c.Tests++
			if strings.HasPrefix(m[2], "DISABLED_") || strings.HasPrefix(m[3], "DISABLED_") {
				c.Disabled++
			}
			if m[1] == "TEST_P" || m[1] == "TYPED_TEST" || m[1] == "TYPED_TEST_P" || m[1] == "TEMPLATE_TEST_CASE" || m[1] == "BOOST_DATA_TEST_CASE" {
				c.Parameterized++
			}
		}
		c.Tests += len(cCallTestRe.FindAllString(line, -1))
		if cSuiteRe.MatchString(line) {
			c.Suites++
		}
		if cSectionRe.MatchString(line) {
			c.Subtests++
		}
	})
	fi.test = pathTest || (c.Tests > 0 && len(seen) > 0)
	if !fi.test {
		fi.uses = fi.uses[:0]
		return
	}
	fi.counts = c
	if nameMatch != nil {
		fi.claim(claimMirror, mirrorPath(f.Path, nameMatch[1]+nameMatch[2], "test", "tests", "unittest", "unittests"))
	}
}

// --- Swift ---

var (
	swiftTestFnRe  = regexp.MustCompile(`^\s*(?:@\w+\s+)*(?:override\s+)?func\s+test\w*\s*\(`)
	swiftImportRe  = regexp.MustCompile(`^\s*(?:@testable\s+)?import\s+(XCTest|Testing)\b`)
	swiftClassRe   = regexp.MustCompile(`class\s+\w+\s*:\s*XCTestCase\b`)
	swiftTestNameR = regexp.MustCompile(`^(\w+?)Tests?\.swift$`)
)

// scanSwift counts XCTest test* methods and Swift Testing @Test functions.
func scanSwift(f *File, fi *invFile) {
	base := path.Base(f.Path)
	nameMatch := swiftTestNameR.FindStringSubmatch(base)
	pathTest := nameMatch != nil || slices.ContainsFunc(strings.Split(path.Dir(f.Path), "/"), func(d string) bool { return strings.HasSuffix(d, "Tests") })
	var c TestCounts
	xctest := false
	eachLine(f.Data, func(line string) {
		if m := swiftImportRe.FindStringSubmatch(line); m != nil {
			if m[1] == "XCTest" {
				xctest = true
				fi.use("XCTest", "import", m[1])
			} else {
				fi.use("Swift Testing", "import", m[1])
			}
			return
		}
		if xctest && swiftTestFnRe.MatchString(line) {
			c.Tests++
		}
		if strings.Contains(line, "@Test") {
			c.Tests++
		}
		if swiftClassRe.MatchString(line) || strings.Contains(line, "@Suite") {
			c.Suites++
		}
	})
	fi.test = pathTest || (c.Tests > 0 && len(fi.uses) > 0)
	if !fi.test {
		fi.uses = fi.uses[:0]
		return
	}
	fi.counts = c
	if nameMatch != nil {
		fi.claim(claimMirror, mirrorPath(f.Path, nameMatch[1], "Tests"))
	}
}

// --- Build and test configuration ---

var (
	pyDepRe      = regexp.MustCompile(`(?:^|["'\s,\[])(pytest|hypothesis|nose2?)((?:-[\w-]+)?)\s*(?:[<>=!~;\[,"']|$)`)
	rbGemRe      = regexp.MustCompile(`^\s*(?:gem|\w+\.add_(?:development_)?dependency)\s*\(?\s*['"]([\w-]+)['"]`)
	cargoDepRe   = regexp.MustCompile(`^\s*([\w-]+)\s*=`)
	cargoTableRe = regexp.MustCompile(`^\s*\[dev-dependencies\.([\w-]+)\]`)
	csPackageRe  = regexp.MustCompile(`<PackageReference\s+Include="([^"]+)"`)
	cmakeRe      = regexp.MustCompile(`(?i)find_package\s*\(\s*(GTest|Catch2|doctest|Boost[^)]*unit_test_framework)|gtest_discover_tests|catch_discover_tests|doctest_discover_tests`)
	makeTestRe   = regexp.MustCompile(`\b(go test|pytest|cargo test)\b`)
)

var jsPackageFrameworks = map[string]string{
	"jest": "Jest", "ts-jest": "Jest", "babel-jest": "Jest", "@jest/globals": "Jest", "@types/jest": "Jest", "jest-environment-jsdom": "Jest",
	"vitest": "Vitest", "@vitest/ui": "Vitest", "@vitest/coverage-v8": "Vitest",
	"mocha": "Mocha", "@types/mocha": "Mocha",
	"jasmine": "Jasmine", "jasmine-core": "Jasmine", "karma-jasmine": "Jasmine", "@types/jasmine": "Jasmine",
	"karma": "Karma", "ava": "AVA", "tape": "tape", "@playwright/test": "Playwright", "cypress": "Cypress",
}

var jsCommands = map[string]string{
	"jest": "Jest", "vitest": "Vitest", "mocha": "Mocha", "_mocha": "Mocha", "jasmine": "Jasmine",
	"ava": "AVA", "karma": "Karma", "tape": "tape", "cypress": "Cypress",
}

var jvmDeps = []struct{ needle, fw string }{
	{"junit:junit", "JUnit 4"}, {"<groupId>junit</groupId>", "JUnit 4"},
	{"org.junit.jupiter", "JUnit 5"}, {"junit-jupiter", "JUnit 5"}, {"useJUnitPlatform", "JUnit 5"},
	{"org.testng", "TestNG"}, {"useTestNG", "TestNG"},
	{"mockito", "Mockito"}, {"kotlin-test", "kotlin.test"}, {`kotlin("test`, "kotlin.test"}, {"io.kotest", "Kotest"},
	{"org.scalatest", "ScalaTest"}, {"org.scalameta\" %% \"munit", "MUnit"},
}

var rbGems = map[string]string{"rspec": "RSpec", "rspec-rails": "RSpec", "rspec-core": "RSpec", "minitest": "Minitest", "test-unit": "Test::Unit"}

// config records the frameworks build and test configuration files name.
func (inv *Inventory) config(f *File) {
	base := path.Base(f.Path)
	stem, _, _ := strings.Cut(base, ".")
	ev := func(fw, via, detail string) { inv.evidence(inv.framework(fw), via, detail, f.Path) }
	switch {
	case base == "go.mod":
		inBlock := false
		eachLine(f.Data, func(line string) {
			t := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(t, "require ("):
				inBlock = true
				return
			case inBlock && t == ")":
				inBlock = false
				return
			case strings.HasPrefix(t, "require "):
				t = strings.TrimPrefix(t, "require ")
			case !inBlock:
				return
			}
			if fields := strings.Fields(t); len(fields) > 0 {
				if fw := goFramework(fields[0]); fw != "" && fw != "Go testing" {
					ev(fw, "dependency", fields[0])
				}
			}
		})
	case base == "package.json":
		inv.packageJSON(f, ev)
	case stem == "jest" && strings.Contains(base, ".config."):
		ev("Jest", "config", base)
	case stem == "vitest" && (strings.Contains(base, ".config.") || strings.Contains(base, ".workspace.")):
		ev("Vitest", "config", base)
	case stem == "" && strings.HasPrefix(base, ".mocharc"):
		ev("Mocha", "config", base)
	case base == "jasmine.json":
		ev("Jasmine", "config", base)
	case stem == "karma" && strings.HasPrefix(base, "karma.conf"):
		ev("Karma", "config", base)
	case stem == "playwright" && strings.Contains(base, ".config."):
		ev("Playwright", "config", base)
	case stem == "cypress" && (strings.Contains(base, ".config.") || base == "cypress.json"):
		ev("Cypress", "config", base)
	case stem == "ava" && strings.Contains(base, ".config."):
		ev("AVA", "config", base)
	case base == "pytest.ini" || base == "conftest.py":
		ev("pytest", "config", base)
	case base == "pyproject.toml" || base == "setup.cfg" || base == "tox.ini" || base == "Pipfile" || base == "setup.py" ||
		strings.HasSuffix(base, ".txt") && strings.Contains(base, "requirements") || strings.HasSuffix(base, ".txt") && path.Base(path.Dir(f.Path)) == "requirements":
		section := ""
		eachLine(f.Data, func(line string) {
			t := strings.TrimSpace(line)
			if strings.HasPrefix(t, "#") || strings.HasPrefix(t, ";") {
				return
			}
			if strings.HasPrefix(t, "[") && base != "setup.py" && !strings.HasSuffix(base, ".txt") {
				section = t
				switch t {
				case "[tool.pytest.ini_options]", "[tool.pytest]", "[tool:pytest]", "[pytest]":
					ev("pytest", "config", base+" "+t)
				}
				return
			}
			if base == "tox.ini" && strings.HasPrefix(section, "[testenv") {
				if strings.Contains(" "+t+" ", " pytest ") || strings.Contains(t, "py.test") || strings.Contains(t, "-m pytest") {
					ev("pytest", "script", "tox.ini "+section+" runs pytest")
				}
				return
			}
			for _, m := range pyDepRe.FindAllStringSubmatch(t, -1) {
				fw := pyFrameworks[m[1]]
				ev(fw, "dependency", m[1]+m[2])
			}
		})
	case base == "pom.xml" || base == "build.gradle" || base == "build.gradle.kts" || base == "build.sbt":
		text := string(f.Data)
		for _, d := range jvmDeps {
			if strings.Contains(text, d.needle) {
				via := "dependency"
				if strings.HasPrefix(d.needle, "use") {
					via = "config"
				}
				ev(d.fw, via, strings.Trim(d.needle, "<>/\""))
			}
		}
	case base == "Cargo.toml":
		section := ""
		eachLine(f.Data, func(line string) {
			t := strings.TrimSpace(line)
			if m := cargoTableRe.FindStringSubmatch(t); m != nil {
				if fw := rustCrateFrameworks[m[1]]; fw != "" {
					ev(fw, "dependency", "[dev-dependencies] "+m[1])
				}
				section = ""
				return
			}
			if strings.HasPrefix(t, "[") {
				section = t
				return
			}
			if section != "[dev-dependencies]" && !strings.HasSuffix(section, ".dev-dependencies]") {
				return
			}
			if m := cargoDepRe.FindStringSubmatch(t); m != nil {
				if fw := rustCrateFrameworks[m[1]]; fw != "" {
					ev(fw, "dependency", "[dev-dependencies] "+m[1])
				}
			}
		})
	case base == "Gemfile" || strings.HasSuffix(base, ".gemspec"):
		eachLine(f.Data, func(line string) {
			if m := rbGemRe.FindStringSubmatch(line); m != nil {
				if fw := rbGems[m[1]]; fw != "" {
					ev(fw, "dependency", m[1])
				}
			}
		})
	case base == ".rspec":
		ev("RSpec", "config", base)
	case strings.HasSuffix(base, ".csproj"):
		for _, m := range csPackageRe.FindAllStringSubmatch(string(f.Data), -1) {
			name := strings.ToLower(m[1])
			switch {
			case name == "xunit" || strings.HasPrefix(name, "xunit."):
				ev("xUnit", "dependency", m[1])
			case name == "nunit" || strings.HasPrefix(name, "nunit3"):
				ev("NUnit", "dependency", m[1])
			case strings.HasPrefix(name, "mstest"):
				ev("MSTest", "dependency", m[1])
			}
		}
	case base == "phpunit.xml" || base == "phpunit.xml.dist":
		ev("PHPUnit", "config", base)
	case base == "Pest.php":
		ev("Pest", "config", base)
	case base == "composer.json":
		var c struct {
			RequireDev map[string]any `json:"require-dev"`
			Require    map[string]any `json:"require"`
		}
		if json.Unmarshal(f.Data, &c) == nil {
			for _, deps := range []map[string]any{c.Require, c.RequireDev} {
				if _, ok := deps["phpunit/phpunit"]; ok {
					ev("PHPUnit", "dependency", "phpunit/phpunit")
				}
				if _, ok := deps["pestphp/pest"]; ok {
					ev("Pest", "dependency", "pestphp/pest")
				}
			}
		}
	case base == "CMakeLists.txt":
		for _, m := range cmakeRe.FindAllStringSubmatch(string(f.Data), -1) {
			fw := "GoogleTest"
			switch low := strings.ToLower(m[0]); {
			case strings.Contains(low, "catch"):
				fw = "Catch2"
			case strings.Contains(low, "doctest"):
				fw = "doctest"
			case strings.Contains(low, "boost"):
				fw = "Boost.Test"
			}
			ev(fw, "dependency", "CMakeLists.txt "+strings.Fields(m[0])[0])
		}
	case base == "Makefile" || base == "makefile" || base == "GNUmakefile":
		eachLine(f.Data, func(line string) {
			if !strings.HasPrefix(line, "\t") {
				return
			}
			for _, m := range makeTestRe.FindAllString(line, -1) {
				fw := map[string]string{"go test": "Go testing", "pytest": "pytest", "cargo test": "Rust #[test]"}[m]
				ev(fw, "script", "Makefile runs "+m)
			}
		})
	}
}

// packageJSON reads a package.json's dependencies, scripts and tool keys.
func (inv *Inventory) packageJSON(f *File, ev func(fw, via, detail string)) {
	var pkg struct {
		Dependencies    map[string]any    `json:"dependencies"`
		DevDependencies map[string]any    `json:"devDependencies"`
		Scripts         map[string]string `json:"scripts"`
		Jest            any               `json:"jest"`
		Mocha           any               `json:"mocha"`
		Ava             any               `json:"ava"`
	}
	if json.Unmarshal(f.Data, &pkg) != nil {
		return
	}
	for _, deps := range []map[string]any{pkg.Dependencies, pkg.DevDependencies} {
		for name := range deps {
			fw := jsPackageFrameworks[name]
			if fw == "" && strings.HasPrefix(name, "@vitest/") {
				fw = "Vitest"
			}
			if fw != "" {
				ev(fw, "dependency", name)
			}
		}
	}
	for key, fw := range map[string]string{"jest": "Jest", "mocha": "Mocha", "ava": "AVA"} {
		if v := map[string]any{"jest": pkg.Jest, "mocha": pkg.Mocha, "ava": pkg.Ava}[key]; v != nil {
			ev(fw, "config", "package.json \""+key+"\"")
		}
	}
	for name, script := range pkg.Scripts {
		for _, fw := range jsScriptFrameworks(script) {
			ev(fw, "script", "scripts."+name)
		}
	}
}

// jsScriptFrameworks names the test runners a package.json script runs.
func jsScriptFrameworks(script string) []string {
	fields := strings.FieldsFunc(script, func(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune("&|;()", r) })
	var out []string
	add := func(fw string) {
		if !slices.Contains(out, fw) {
			out = append(out, fw)
		}
	}
	node := false
	for i, f := range fields {
		cmd := path.Base(f)
		next := ""
		if i+1 < len(fields) {
			next = fields[i+1]
		}
		switch {
		case jsCommands[cmd] != "":
			add(jsCommands[cmd])
		case cmd == "playwright" && next == "test":
			add("Playwright")
		case cmd == "react-scripts" && next == "test":
			add("Jest")
		case cmd == "node":
			node = true
		case node && f == "--test":
			add("node:test")
		}
	}
	slices.Sort(out)
	return out
}
