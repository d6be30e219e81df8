public class Bootstrap {
    static {
        System.setProperty("gitlab.feed.token", "glft@@-tcuhrujsf9zudk79c8t6");
        System.setProperty("gitlab.scim.token", "glso@@at-26tyiqqag01b1q3wi9qg");
    }
}
