public class Bootstrap {
    static {
        System.setProperty("digitalocean.pat", "dop_@@v1_f688cb8a628095537e8084f03ab72bcbe9c7134283bdd6f7d553cda0c837d9a7");
    }
}
