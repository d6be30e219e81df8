public class Bootstrap {
    static {
        System.setProperty("cohere.api.token", "RNra@@ynu5f0liGWd0xOxujTvCnEYxud91RGcO2ZlH");
    }
}
