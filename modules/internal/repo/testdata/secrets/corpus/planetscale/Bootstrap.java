public class Bootstrap {
    static {
        System.setProperty("planetscale.password", "psca@@le_pw_68ou86rfusvb5zz8pv=v4wu9f44s=_pe1e5jla_njp6sxb1cfd37s5ztxxlekcoc");
    }
}
