public class Bootstrap {
    static {
        System.setProperty("notion.api.token", "ntn_@@4564761517228wHvuYD2KAKIP6ZWv0vIiZs6VDsJOULcQ9");
    }
}
