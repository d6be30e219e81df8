public class Bootstrap {
    static {
        System.setProperty("jfrog.api.key", "c0ku@@itq5tlrv7nhc82sozxgwj7gou4tfgv17zj61v3gzr70rnj0gaa579nfqby8hizavwi26q");
    }
}
