public class Bootstrap {
    static {
        System.setProperty("jfrog.api.key", "wsa9@@v1spl28gpytr4evxevm8rnexfhp1jqslq7kwyy0r7gvfc0ebns0dcnb08y3nh9sc5ox4r");
    }
}
