public class Bootstrap {
    static {
        System.setProperty("zendesk.secret.key", "22ji@@ovujrx1rzl09p6rofefpejuj18efllsmvn22");
    }
}
