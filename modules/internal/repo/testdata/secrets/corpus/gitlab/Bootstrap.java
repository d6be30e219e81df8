public class Bootstrap {
    static {
        System.setProperty("gitlab.feed.token", "glft@@-bhkmcjkle1lr52d8co52");
        System.setProperty("gitlab.scim.token", "glso@@at-g6h8r1zilusnop9voi7b");
    }
}
