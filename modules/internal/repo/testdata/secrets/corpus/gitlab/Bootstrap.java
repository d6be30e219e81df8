public class Bootstrap {
    static {
        System.setProperty("gitlab.feed.token", "glft@@-qi1i03wlrymlgiwfud3g");
        System.setProperty("gitlab.scim.token", "glso@@at-l3beku97nvmlqdn8iao5");
    }
}
