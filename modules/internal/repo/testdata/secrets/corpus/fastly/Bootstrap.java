public class Bootstrap {
    static {
        System.setProperty("fastly.api.token", "60is@@15p-7b_lc_un65jo8v=n5aqwpy4t");
    }
}
