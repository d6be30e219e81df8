public class Bootstrap {
    static {
        System.setProperty("bitbucket.client.secret", "8l6d@@xb59iwsrmmu6sstaqzy9rj5w5ykjsqc70i0j6i92nr105ll1242yrio9czpc");
    }
}
