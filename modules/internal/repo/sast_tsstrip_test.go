package repo

import (
	"strings"
	"testing"
)

// TestTSStrip checks that TypeScript with its types blanked out parses as
// JavaScript, keeps its offsets and lines, and keeps its code.
func TestTSStrip(t *testing.T) {
	cases := []struct{ ts, keep string }{
		{"import m = require('m')\nm.run()", "const  m = require('m')"},
		{"import type { A } from './a'\nimport { b as c } from 'b'\nc()", "import { b as c } from 'b'"},
		{"interface A { x: number; y?: string }\ntype B<T> = T | null;\nlet a: A = f();", "let a    = f();"},
		{"function f<T>(a: T, b?: number, ...r: string[]): Promise<T[]> { return g<T>(a)!; }", "function f   (a   , b         , ...r          )               { return g   (a) ; }"},
		{"const h = async (req: Request, { body }: { body: string }): Promise<void> => { x = req.body as string; };", "=> { x = req.body          ; };"},
		{"export abstract class A<T> extends B<T> implements C {\n  private readonly x: Map<string, T> = new Map();\n  y?: number;\n  constructor(private db: Db) { super(); }\n  m(): void\n  m(a?: string): void {}\n}", "  constructor(        db    ) { super(); }"},
		{"try { f() } catch (e: unknown) { g(e) }\nconst o = { k: a ? 1 : 2 };\nif (a < b && c > (d)) {}", "const o = { k: a ? 1 : 2 };\nif (a < b && c > (d)) {}"},
		{"enum E { A, B }\ndeclare const V: string;\n@Injectable()\nclass S { @Input() name: string; }", "class S {          name        ; }"},
	}
	for _, c := range cases {
		out := tsStrip(c.ts)
		if len(out) != len(c.ts) || strings.Count(out, "\n") != strings.Count(c.ts, "\n") {
			t.Errorf("tsStrip(%q) moved offsets: %q", c.ts, out)
		}
		if !strings.Contains(out, c.keep) {
			t.Errorf("tsStrip(%q) = %q, want it to hold %q", c.ts, out, c.keep)
		}
		src := blankWord(jsImport.ReplaceAllStringFunc(jsExport.ReplaceAllStringFunc(out, blankOut), blankOut), "await")
		if _, err := jsParse(src); err != nil {
			t.Errorf("tsStrip(%q) = %q does not parse: %v", c.ts, out, err)
		}
	}
}
