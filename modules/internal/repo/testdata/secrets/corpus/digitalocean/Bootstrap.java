public class Bootstrap {
    static {
        System.setProperty("digitalocean.pat", "dop_@@v1_7d7fc74cbc9dfa8549b7cf6259efd34518244fdb63b7fc9cd1567e3f10d4caf4");
    }
}
